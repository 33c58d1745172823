"""Engines: the interface every player meets (``base``), the built-ins (``random``,
``search``, ``perfect``), external Hub programs (``hub``) and the spec registry
that turns ``"hard"`` or ``"hub:./myengine"`` into an Engine (``registry``)."""
