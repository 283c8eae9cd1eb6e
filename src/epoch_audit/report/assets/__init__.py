"""Static assets (template, CSS, JS) inlined into the run report."""
