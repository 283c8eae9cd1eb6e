"""One module per invariant id: the protocol rule in its docstring, a pure ``check(ctx)`` and, for
a check that reads request-log traffic, ``carry(ctx)``. They are listed in
``epoch_audit.gold.registry.REGISTRY``; shared analysis lives in ``epoch_audit.gold.analysis``.
"""
