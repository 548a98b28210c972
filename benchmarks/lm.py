"""``fairshare bench lm``: which parts of a prompt a generated answer comes from, fairshare's GenerationGame against
captum's LLMAttribution (FeatureAblation, ShapleyValueSampling, KernelShap) on the same game at equal forward passes.

Every method explains the same thing: the total log-probability of a given answer, teacher-forced, the players the
prompt's tokens, a removed token cut out (captum through an ``InterpretableInput`` that builds the game's own
sequences, ``forward_in_tokens=False``: one forward pass per coalition). Forward passes are counted at the model
(sequences through its ``forward``), the same meter for every method.

(a) **Planted sources.** Documents of 500 and 4,000 word tokens (paragraphs of 3-6 sentences of 6-16 words) from a
word-level tokenizer built here. One sentence holds the answer's source: 4 key tokens; three other sentences hold
2 decoy tokens each (half the weight of a key). The model is a synthetic causal LM whose logit of every answer
token is ``6 tanh(E / 2)`` plus a small association of every other word (``N(0, 0.02)`` each, summed over the
context), with ``E`` the keys plus half the decoys the context shows: evidence saturates, as redundant evidence does
in text. Scored: how often the planted sentence has the largest total value (the sum of its tokens' values), and
how often the single largest token value lies in it. fairshare runs its default for long prompts (Owen values over
paragraphs > sentences > words > tokens, ``owen-adaptive``); FeatureAblation needs ``n + 1`` passes and one
permutation of ShapleyValueSampling ``n + 1``, so they cannot run below that.

(b) **A tiny GPT-2** (2 layers, random weights with initializer range 0.3, a vocabulary of 64 words built here, no
download): prompts of ``tokens`` random words, the answer the model's greedy continuation of 3 tokens. Reference:
exact Shapley values (all ``2^n`` coalitions). Normalized error ``|phi - phi*|^2 / |phi*|^2`` at equal passes, mean
over prompts and seeds.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
import types

import numpy as np

import fairshare as fs
from fairshare.games.spans import unit_starts

from .common import configuration, plot_lines, results_dir, table, write_report

SIZES = {
    "quick": dict(lengths=(500,), prompts=2, budgets=(1000,), seeds=1, gpt2_prompts=2, tokens=8, gpt2_budgets=(32, 64),
                  memory=False),
    "default": dict(lengths=(500, 4000), prompts=20, budgets=(300, 1000), seeds=3, gpt2_prompts=10, tokens=14,
                    gpt2_budgets=(64, 256, 1024), memory=True),
    "full": dict(lengths=(500, 4000), prompts=50, budgets=(300, 1000, 3000), seeds=5, gpt2_prompts=20, tokens=16,
                 gpt2_budgets=(64, 256, 1024, 4096), memory=True),
}
CAPTUM = ("FeatureAblation", "ShapleyValueSampling", "KernelShap")
KEYS, DECOYS, ANSWER, WORDS = 4, 8, 3, 500


# ---------------------------------------------------------------------------------------- the models
def word_tokenizer(words: list[str]):
    """A Hugging Face fast tokenizer of whitespace-separated ``words`` (ids 0..2: bos, pad, unk), built here."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<bos>": 0, "<pad>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", pad_token="<pad>", unk_token="<unk>")


def planted_vocabulary() -> list[str]:
    return (["."] + [f"k{i}" for i in range(KEYS)] + [f"d{i}" for i in range(DECOYS)] + [f"a{i}" for i in range(ANSWER)]
            + [f"w{i}" for i in range(WORDS)])


def planted_lm(tokenizer, seed: int = 0):
    """The synthetic causal LM of (a) (see the module docstring), counting the sequences it runs."""
    import torch

    class PlantedLM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            vocab = tokenizer.get_vocab()
            V = len(vocab)
            self.config = types.SimpleNamespace(vocab_size=V, bos_token_id=0, n_positions=8192)
            weight, noise = torch.zeros(V), torch.zeros(V)
            for i in range(KEYS):
                weight[vocab[f"k{i}"]] = 1.0
            for i in range(DECOYS):
                weight[vocab[f"d{i}"]] = 0.5
            words = torch.tensor([vocab[f"w{i}"] for i in range(WORDS)])
            noise[words] = torch.as_tensor(np.random.default_rng(seed).normal(0.0, 0.02, WORDS), dtype=torch.float32)
            self.register_buffer("weight", weight)
            self.register_buffer("noise", noise)
            self.answers = torch.tensor([vocab[f"a{i}"] for i in range(ANSWER)])
            self.scale = torch.nn.Parameter(torch.tensor(6.0), requires_grad=False)
            self.passes = 0

        def forward(self, input_ids, attention_mask=None, position_ids=None, logits_to_keep=0):
            self.passes += int(input_ids.shape[0])
            shown = torch.ones_like(input_ids, dtype=torch.float32) if attention_mask is None else \
                attention_mask[:, -input_ids.shape[1]:].float()
            evidence = torch.cumsum(shown * self.weight[input_ids], dim=1)
            drift = torch.cumsum(shown * self.noise[input_ids], dim=1)
            score = self.scale * torch.tanh(evidence / 2) + drift
            if logits_to_keep:
                score = score[:, -logits_to_keep:]
            logits = torch.zeros(score.shape + (self.config.vocab_size,))
            logits[:, :, self.answers] = score[:, :, None]
            return types.SimpleNamespace(logits=logits)

    return PlantedLM().eval()


def document(rng: np.random.Generator, length: int) -> tuple[str, int]:
    """A document of ``length`` tokens with the answer's source planted in one sentence; returns the text and the
    planted sentence's position among the sentences."""
    sentences, total = [], 0
    while total < length:
        words = [f"w{i}" for i in rng.integers(0, WORDS, int(rng.integers(6, 17)))][: length - total - 1] + ["."]
        sentences.append(words)
        total += len(words)
    order = rng.permutation(np.arange(1, len(sentences)))
    planted = int(order[0])
    for where, tokens in zip(order[:4], [[f"k{i}" for i in range(KEYS)]] + [[f"d{2 * j}", f"d{2 * j + 1}"]
                                                                              for j in range(3)]):
        body = sentences[where]
        spots = rng.choice(max(len(body) - 1, 1), size=min(len(tokens), max(len(body) - 1, 1)), replace=False)
        for s, t in zip(spots, tokens):
            body[s] = t
    text, left = "", 0
    while left < len(sentences):
        take = int(rng.integers(3, 7))
        text += ("\n\n" if text else "") + " ".join(" ".join(s) for s in sentences[left:left + take])
        left += take
    return text, planted


def tiny_gpt2(vocabulary: list[str]):
    """A 2-layer GPT-2 with random weights (initializer range 0.3) over ``vocabulary``, and its tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = word_tokenizer(vocabulary)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
                        eos_token_id=0, initializer_range=0.3)
    torch.manual_seed(0)
    return GPT2LMHeadModel(config).eval(), tokenizer


# -------------------------------------------------------------------------------------------- methods
def captum_values(kind: str, model, tokenizer, game, budget: int, seed: int) -> np.ndarray | None:
    """captum's LLMAttribution of ``game``'s answer with ``kind`` on the game's own sequences, or None where the
    method needs more than ``budget`` forward passes."""
    import torch
    from captum.attr import FeatureAblation, KernelShap, LLMAttribution, ShapleyValueSampling, TextTemplateInput

    n = game.n_players

    class Spans(TextTemplateInput):
        """The game's players as captum's interpretable features; a coalition's model input is the game's own."""

        def __init__(self) -> None:
            self.values, self.dict_keys, self.baselines = list(game.span_texts), [], [""] * n
            self.n_features = self.n_itp_features = n
            self.mask, self.template = None, "{}" * n
            self.format_fn = self.template.format

        def to_model_input(self, perturbed_tensor=None):
            keep = np.ones((1, n), bool) if perturbed_tensor is None else \
                perturbed_tensor.detach().cpu().numpy().reshape(1, n) > 0.5
            return torch.as_tensor(game.token_lists(keep)[0])[None]

    torch.manual_seed(seed)
    if kind == "FeatureAblation":
        if budget < n + 1:
            return None
        method, kwargs = FeatureAblation(model), {}
    elif kind == "ShapleyValueSampling":
        if budget < n + 1:
            return None
        method, kwargs = ShapleyValueSampling(model), {"n_samples": budget // (n + 1)}
    else:
        method, kwargs = KernelShap(model), {"n_samples": budget}
    result = LLMAttribution(method, tokenizer).attribute(Spans(), target=torch.as_tensor(game.target),
                                                         forward_in_tokens=False, **kwargs)
    return result.seq_attr.detach().cpu().numpy().astype(float)


#: the method each fairshare row ran (``auto``'s choice), by row name
CHOSEN: dict[str, set] = {}


def ours(game, budget: int, seed: int, name: str = "fairshare", **kwargs) -> np.ndarray | None:
    """fairshare's values of ``game`` (its default for the game, or ``kwargs``), None where the method needs more
    than ``budget`` passes."""
    try:
        e = fs.explain(game, budget=budget, seed=seed, progress=False, **kwargs)
    except fs.BudgetError:
        return None
    CHOSEN.setdefault(name, set()).add(e.method)
    return e.values[0]


def label(name: str, where: str = "") -> str:
    """``name`` with the methods its runs at ``where`` chose."""
    chosen = CHOSEN.get(name + where)
    return f"{name} ({', '.join(sorted(chosen))})" if chosen else name


def counted(model, run) -> tuple[np.ndarray | None, int, float]:
    """``run()``'s values, the forward passes the model ran for it and the seconds it took."""
    before, start = model.passes if hasattr(model, "passes") else 0, time.perf_counter()
    values = run()
    return values, model.passes - before, time.perf_counter() - start


# ------------------------------------------------------------------------------------------- (a) planted
def planted(cfg: dict) -> list:
    """Rows of (a): length, budget, method, passes, planted sentence first, top token in it, seconds."""
    tokenizer = word_tokenizer(planted_vocabulary())
    model = planted_lm(tokenizer)
    target = [tokenizer.get_vocab()[f"a{i}"] for i in range(ANSWER)]
    rows = []
    for length in cfg["lengths"]:
        docs = [document(np.random.default_rng(10_000 + 97 * length + d), length) for d in range(cfg["prompts"])]
        games = [fs.games.GenerationGame(model, text, target=target, tokenizer=tokenizer) for text, _ in docs]
        for budget in cfg["budgets"]:
            score: dict[str, list] = {}
            for (text, where), game in zip(docs, games):
                sentence = np.cumsum(unit_starts(game.pieces)["sentences"]) - 1
                at = f"@{length}/{budget}"
                runs = {"fairshare": lambda g=game: ours(g, budget, 0, "fairshare" + at),
                        "fairshare owen-permutation": lambda g=game: ours(g, budget, 0, "fairshare owen-permutation"
                                                                          + at, method="owen-permutation")}
                runs.update({f"captum {k}": (lambda g=game, k=k: captum_values(k, model, tokenizer, g, budget, 0))
                             for k in CAPTUM})
                for name, run in runs.items():
                    values, passes, seconds = counted(model, run)
                    if values is None:
                        score.setdefault(name, [])
                        continue
                    totals = np.bincount(sentence, weights=values)
                    score.setdefault(name, []).append((passes, float(np.argmax(totals) == where),
                                                       float(sentence[int(np.argmax(values))] == where), seconds))
            for name, got in score.items():
                if not got:
                    rows.append([length, budget, name, "one order needs more", "-", "-", "-"])
                    continue
                a = np.asarray(got)
                rows.append([length, budget, label(name, f"@{length}/{budget}"), float(a[:, 0].mean()),
                             float(a[:, 1].mean()), float(a[:, 2].mean()), float(a[:, 3].mean())])
    return rows


# ------------------------------------------------------------------------------------------- (b) GPT-2
def gpt2(cfg: dict) -> tuple[list, dict]:
    """Rows of (b): budget, method, passes, normalized error (mean, and per prompt quartiles), and plot series."""
    import torch

    words = [f"v{i}" for i in range(61)] + [".", ",", "?"]
    model, tokenizer = tiny_gpt2(words)
    counter = {"passes": 0}
    forward = model.forward

    @functools.wraps(forward)                   # its signature kept: fairshare reads which arguments it takes
    def counting(*args, **kwargs):              # captum calls model.forward itself: counted here, not in a hook
        ids = kwargs.get("input_ids", args[0] if args else None)
        counter["passes"] += int(ids.shape[0])
        return forward(*args, **kwargs)

    model.forward = counting
    rng = np.random.default_rng(7)
    errors: dict[tuple[int, str], list] = {}
    passes: dict[tuple[int, str], list] = {}
    for p in range(cfg["gpt2_prompts"]):
        prompt = " ".join(rng.choice(words[:61], cfg["tokens"]).tolist())
        game = fs.games.GenerationGame(model, prompt, tokenizer=tokenizer, max_new_tokens=ANSWER, kv_cache=False)
        reference = fs.exact(game, "shapley").values
        scale = float(np.sum(reference ** 2))
        for budget in cfg["gpt2_budgets"]:
            for seed in range(cfg["seeds"]):
                runs = {"fairshare": lambda: ours(game, budget, seed, f"fairshare@{budget}")}
                runs.update({f"captum {k}": (lambda k=k: captum_values(k, model, tokenizer, game, budget, seed))
                             for k in CAPTUM})
                for name, run in runs.items():
                    before = counter["passes"]
                    with torch.inference_mode():
                        values = run()
                    if values is None:
                        continue
                    errors.setdefault((budget, name), []).append(float(np.sum((values - reference) ** 2)) / scale)
                    passes.setdefault((budget, name), []).append(counter["passes"] - before)
    rows, series = [], {}
    for (budget, name), err in sorted(errors.items()):
        e = np.asarray(err)
        shown = label(name, f"@{budget}")
        rows.append([budget, shown, float(np.mean(passes[(budget, name)])), float(e.mean()), float(np.median(e)),
                     float(np.quantile(e, 0.9))])
        series.setdefault(name, ([], []))
        series[name][0].append(float(np.mean(passes[(budget, name)])))
        series[name][1].append(float(e.mean()))
    return rows, series


# ------------------------------------------------------------------------------------------- memory
_PROBE = """
import resource, json, numpy as np, torch, fairshare as fs
from transformers import GPT2Config, GPT2LMHeadModel
torch.set_num_threads(1)
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=512, n_positions=4200, n_embd=32, n_layer=2, n_head=2,
                                   bos_token_id=0, eos_token_id=0)).eval()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
prompt = np.random.default_rng(0).integers(1, 512, 4000)
game = fs.games.GenerationGame(model, prompt, target=[5, 6, 7])
e = fs.explain(game, budget={budget}, seed=0, progress=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(dict(before=before / 1024, peak=peak / 1024, info=dict((k, e.info[k]) for k in
      ("forward_passes", "model_calls", "positions_computed", "positions_without_kv_cache", "kv_cache")))))
"""


def memory(budget: int = 300) -> dict:
    """Peak resident memory (MB) of a fresh process explaining a 4,000-token prompt of a tiny GPT-2 (the process
    with torch and transformers loaded, and its peak while explaining), and what the model ran."""
    out = subprocess.run([sys.executable, "-c", _PROBE.replace("{budget}", str(budget))], capture_output=True,
                         text=True, timeout=3000)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    import torch

    cfg = configuration(SIZES, size, seeds, quiet=True)
    torch.set_num_threads(1)                    # small models: one thread (spinning threads on a shared machine)
    start = time.perf_counter()
    planted_rows = planted(cfg)
    gpt2_rows, series = gpt2(cfg)
    probe = memory() if cfg["memory"] else None
    folder = results_dir("lm", out)
    plot_lines(folder / "gpt2_error.png", f"tiny GPT-2, {cfg['tokens']}-token prompts: error vs forward passes",
               "forward passes", "normalized squared error", series)
    best = {}
    for budget, name, _, err, *_ in gpt2_rows:
        if name.startswith("captum"):
            best[budget] = min(best.get(budget, np.inf), err)
    ratios = [[b, r[3], best.get(b, np.nan), best.get(b, np.nan) / r[3]] for b in sorted(best)
              for r in gpt2_rows if r[0] == b and r[1].startswith("fairshare")]
    sections = [
        f"Run with `fairshare bench lm --size {size}` in {time.perf_counter() - start:.0f} s (torch on one thread). "
        + (__doc__ or "").split("\n\n", 1)[1],
        "## (a) Planted sources: how often the source ranks first\n\nPasses: forward passes at the model (mean per "
        "prompt). Sentence first: the planted sentence has the largest total value. Token first: the largest token "
        f"value lies in the planted sentence. {cfg['prompts']} prompts per length.\n\n"
        + table(["tokens", "budget", "method", "passes", "sentence first", "token first", "seconds"], planted_rows),
        f"## (b) Tiny GPT-2: error against exact Shapley values\n\n{cfg['gpt2_prompts']} prompts of {cfg['tokens']} "
        f"tokens, {cfg['seeds']} seed(s). FeatureAblation is leave-one-out (not an estimate of Shapley values): its "
        "error does not shrink with passes.\n\n"
        + table(["budget", "method", "passes", "mean error", "median error", "90% error"], gpt2_rows)
        + "\n\nRatio of the best captum method's mean error to fairshare's at each budget:\n\n"
        + table(["budget", "fairshare", "best captum", "ratio"], ratios),
    ]
    if probe is not None:
        info = probe["info"]
        sections.append(
            "## Memory and the KV cache: a 4,000-token prompt of a tiny GPT-2\n\nA fresh process: "
            f"{probe['before']:.0f} MB with torch, transformers and the model loaded; peak {probe['peak']:.0f} MB while "
            f"explaining at 300 passes (batches of at most 16,384 positions). The model ran {info['forward_passes']} "
            f"sequences in {info['model_calls']} calls and computed {info['positions_computed']:,} positions; "
            f"without the KV cache of the kept common prefix it would have computed "
            f"{info['positions_without_kv_cache']:,} (KV cache: {info['kv_cache']}).")
    write_report("lm", "fairshare bench lm", sections, out)
