"""The programs users run, at the top of the layers: everything below is a library they call.

- `cli.py`: the `gfcr` command (`python -m gfcr` too): list, run, bench, train, serve, tiny-model, pretrained;
- `bench/`: benchmarking agents on suites, and its HTML report;
- `serve.py`: an OpenAI-compatible server over a local model;
- `tiny_model.py`: a small randomly initialised chat model, for demos and tests;
- `pretrained.py`: a real pretrained model (SmolLM2-135M) shipped on PyPI, converted once, offline.
"""
