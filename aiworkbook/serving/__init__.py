"""Serving proof: a load generator for any OpenAI-compatible streaming server, an embedded server
around a plain-torch decoder (block-based KV pool, static and continuous batching, admission control),
latency metrics with vLLM's and MLPerf LoadGen's definitions, sweeps with a knee detector, and
importers for `vllm bench serve` and GuideLLM results.

torch is imported only by the embedded server's torch backend; the load generator needs aiohttp only.
"""
