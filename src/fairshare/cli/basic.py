"""``fairshare methods`` (the registry, as a list or the README's table) and ``fairshare demo``."""

from __future__ import annotations

import argparse

__all__ = ["add_methods", "add_demo"]


def add_methods(sub: argparse._SubParsersAction) -> None:
    """The ``methods`` command."""
    p = sub.add_parser("methods", help="list the registered methods, the indices they support, their options")
    p.add_argument("--markdown", action="store_true", help="print the README's methods table")
    p.set_defaults(func=_methods)


def add_demo(sub: argparse._SubParsersAction) -> None:
    """The ``demo`` command."""
    p = sub.add_parser("demo", help="explain one breast-cancer prediction with every method")
    p.add_argument("--budget", type=int, default=200, help="evaluations per estimator (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_demo)


def _methods(args: argparse.Namespace) -> int:
    from ..engine.registry import methods, methods_markdown

    if args.markdown:
        print(methods_markdown())
        return 0
    rows = methods()
    width = max(len(m.name) for m in rows)
    iwidth = max(len(", ".join(m.indices)) for m in rows)
    print(f"{'method':<{width}}  {'indices':<{iwidth}}  description")
    for m in rows:
        print(f"{m.name:<{width}}  {', '.join(m.indices):<{iwidth}}  {m.description}")
        for doc in m.option_docs.values():
            print(f"{'':<{width}}  {'':<{iwidth}}    {doc}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    if not 0 <= args.seed < 2**32:                        # the data split's random_state takes 32 bits
        raise ValueError(f"--seed must be an integer in 0..4294967295, got {args.seed}")
    print(demo_main(budget=args.budget, seed=args.seed))
    return 0
