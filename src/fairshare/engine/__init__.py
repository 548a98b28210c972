"""The estimation engine: the method registry, the one method choice, the one driver, the samplers and solvers,
stopping rules and the budgeted evaluation of games.

- :mod:`.registry` lists every method (declared in :mod:`.spec` terms by its sampler/solver module);
- :mod:`.choice` decides ``method="auto"`` from facts that do not change between runs;
- :mod:`.driver` is the one loop; :mod:`.protocols` declares what it talks to (Sampler, Batch, Solver);
- :mod:`.samplers` draw coalitions (size designs with and without replacement) and permutations;
- :mod:`.exact` holds every exact value (closed forms, enumeration, interactions, Owen) and the ``exact`` method;
- :mod:`.regression` (over :mod:`.formulations`, :mod:`.solve`, :mod:`.iterative`, :mod:`.packed`,
  :mod:`.surrogate`), :mod:`.montecarlo`, :mod:`.sgd`, :mod:`.leave_one_out`, :mod:`.owen`, :mod:`.owen_adaptive`
  and the interaction methods are the estimators;
- :mod:`.stopping` holds the stopping rules, :mod:`.evaluation` the evaluator that never evaluates a
  coalition twice nor past the budget; :mod:`.engine` runs a chosen method, its random streams split from the
  seed by :mod:`fairshare._core.seeds`.

The user's doors (``fs.estimate``, ``fs.exact``, ``fs.explain``, ``fs.value_data``, the CLI) check their
arguments and build games; they reach the engine through :mod:`.choice` and the registry.
"""
