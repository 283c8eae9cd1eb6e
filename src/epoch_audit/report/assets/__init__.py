"""Static assets (CSS, JS) inlined verbatim into the report pages (the pages: ``report/templates``)."""
