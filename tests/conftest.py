"""pytest configuration shared by the test modules."""

# Scripts run as external engine processes by the tests, not test modules: they
# read standard input when imported, so doctest collection must skip them.
collect_ignore = ["fake_engines"]
