"""Pure DataFrame -> DataFrame transforms: parsing, timelines, invariants."""
