"""Analysis shared by several invariant checks (one module per topic); no check lives here."""
