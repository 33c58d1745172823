"""The local play-and-explore page (``tournament play``): a Starlette app, plain JavaScript and SVG.

:mod:`tournament.web.state` builds the JSON records from the rules core,
:mod:`tournament.web.engines` runs the engines as Hub processes,
:mod:`tournament.web.app` serves the API and the page, :mod:`tournament.web.server`
runs it with uvicorn. The API is documented in docs/web.md.
"""
