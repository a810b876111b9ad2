"""English texts of the patterns, the questionnaire and the report (the reference table: Dutch and
German hold exactly the same keys, checked by tests/test_patterns_text.py)."""

from __future__ import annotations

TEXT: dict[str, str | tuple[str, ...]] = {
    # ---- classical ML on CPU ---------------------------------------------------------------
    "pattern.classical-ml-cpu.title": "Classical ML on CPU",
    "pattern.classical-ml-cpu.summary": "Tabular models trained and scored on many CPU cores with lots of RAM.",
    "pattern.classical-ml-cpu.use_when": (
        "Your features are tables and your models are trees, linear models or other CPU-friendly learners",
        "Memory size and memory bandwidth limit you, not floating-point rate",
        "Repeatable results and steady throughput matter more than peak FLOPS",
    ),
    "pattern.classical-ml-cpu.infrastructure": (
        "CPU nodes with many cores",
        "Plenty of RAM for joins and feature engineering in memory",
        "Fast local disks for feature caches, Parquet files and spill",
    ),
    "pattern.classical-ml-cpu.red_flags": (
        "Jobs spill to disk or swap because the working set outgrew RAM",
        "Run times vary widely between identical runs",
        "Cores sit idle while a single-threaded step or a slow read holds the pipeline",
    ),
    "pattern.classical-ml-cpu.sizing": (
        "How large is the biggest in-memory table after joins, and how many copies does the pipeline hold?",
        "How many cores can the training library use at once?",
        "How fast must a full feature rebuild read its source data?",
    ),
    # ---- deep-learning training and fine-tuning --------------------------------------------
    "pattern.dl-training.title": "Deep-learning training and fine-tuning",
    "pattern.dl-training.summary": "Neural networks trained or fine-tuned on GPUs, where memory and "
    "checkpoints decide whether a run finishes.",
    "pattern.dl-training.use_when": (
        "You train neural networks or adapt a pretrained model to your data",
        "GPU memory and training throughput are what hold you back",
        "A run must survive failures through checkpoints and be repeatable",
    ),
    "pattern.dl-training.infrastructure": (
        "Nodes packed with GPUs",
        "Enough CPU and RAM that the data loader never starves the GPUs",
        "Storage that reads the dataset and writes checkpoints fast",
        "A fast interconnect once training spans more than one node",
    ),
    "pattern.dl-training.red_flags": (
        "GPU utilisation falls while batches are being loaded",
        "Writing checkpoints takes a large share of the wall time",
        "Out-of-memory errors keep coming back: the memory model is wrong",
    ),
    "pattern.dl-training.sizing": (
        "Parameters, precision and optimizer: what do the model states cost per GPU?",
        "Micro-batch and sequence length: how much activation memory, with or without recomputation?",
        "How large is a resumable checkpoint, how long does it take to write, and how often?",
        "How many bytes per second must the data loader deliver to keep every GPU busy?",
    ),
    # ---- LLM inference and serving ----------------------------------------------------------
    "pattern.llm-inference.title": "LLM inference and serving",
    "pattern.llm-inference.summary": "Models answering requests, where latency under load and KV-cache "
    "headroom decide the node.",
    "pattern.llm-inference.use_when": (
        "Requests must be answered within a latency target",
        "Large offline batches must go through at high throughput",
        "Behaviour under many concurrent requests has to be predictable",
    ),
    "pattern.llm-inference.infrastructure": (
        "GPU nodes chosen for steady latency rather than peak throughput",
        "GPU memory left over for the KV cache, which grows with concurrency and context length",
        "A model server with continuous batching on top: a software choice, not a hardware one",
    ),
    "pattern.llm-inference.red_flags": (
        "Latency climbs faster than linearly as concurrency rises",
        "Out-of-memory errors after a burst of traffic",
        "Instability once prompts or outputs get longer",
    ),
    "pattern.llm-inference.sizing": (
        "Weights at the serving precision: how many GPUs (tensor parallel) must hold them?",
        "Context length times concurrency: how much KV cache, and how many sequences fit?",
        "Which time to first token and time per output token does the SLO allow at peak load?",
        "How long does a cold start take to load the weights?",
    ),
    # ---- hybrid ------------------------------------------------------------------------------
    "pattern.hybrid.title": "Hybrid: train here, serve there",
    "pattern.hybrid.summary": "Separate training and serving pools on shared storage, with a promotion "
    "path between them.",
    "pattern.hybrid.use_when": (
        "Training bursts must never endanger the production SLO",
        "Experiments and production have to scale on their own",
        "Each workload should carry its own cost",
    ),
    "pattern.hybrid.infrastructure": (
        "One worker pool for training and another for inference",
        "Shared storage, with artifact management and observability over both",
        "A clear path that promotes a model from experiment to production",
    ),
    "pattern.hybrid.red_flags": (
        "A training job takes GPUs the serving pool was counting on",
        "Promoting a model is a manual, one-off procedure",
        "Nobody can say which pool a cost belongs to",
    ),
    "pattern.hybrid.sizing": (
        "Size the training pool for throughput and the serving pool for concurrency and latency, separately",
        "How large are the artifacts moving between the pools, and how long does promotion take?",
        "How fast can the serving pool restore the previous model when a rollout goes wrong?",
    ),
    # ---- questionnaire ----------------------------------------------------------------------
    "question.model_kind": "What kind of models do you run?",
    "answer.model_kind.tabular": "Tabular (trees, linear models)",
    "answer.model_kind.neural": "Neural networks (vision, speech, embeddings)",
    "answer.model_kind.llm": "Large language models",
    "question.phase": "Do you train, serve, or both?",
    "answer.phase.training": "Training or fine-tuning",
    "answer.phase.serving": "Serving (inference)",
    "answer.phase.both": "Both",
    "question.latency_slo_ms": "Latency target per request in milliseconds (empty: none)",
    "question.separate_pools": "Must training and serving run on separate pools?",
    "question.multi_node": "Will one job span several nodes?",
    # ---- reasons ----------------------------------------------------------------------------
    "reason.tabular": "Tabular models run well on CPU cores; GPUs would mostly wait.",
    "reason.training": "Training and fine-tuning are bound by GPU memory, throughput and checkpoints.",
    "reason.serving": "Serving is bound by latency under concurrency and KV-cache headroom.",
    "reason.both_separate": "You train and serve and want them apart: two pools scale and cost independently.",
    "reason.both_slo": "You train and serve with a latency target: separate pools keep training bursts "
    "away from the SLO.",
    "reason.both_shared": "You train and serve on the same nodes without a latency target: size for "
    "training, which needs the most memory.",
    "reason.slo": "A latency target of {slo_ms:g} ms makes p95/p99 and time to first token the figures to lock.",
    "reason.multi_node": "Jobs across nodes make the interconnect and all-reduce bandwidth a proof to run.",
    "reason.tabular_serving": "Tabular models are served from CPU nodes too; no GPU sizing is needed.",
    # ---- targets ----------------------------------------------------------------------------
    "target.cpu_utilisation": "CPU utilisation across cores",
    "target.ram_peak": "Peak RAM and spill to disk",
    "target.run_time_variance": "Variance of run and pipeline-step times",
    "target.staging_time": "Dataset staging time",
    "target.gpu_utilisation": "GPU utilisation",
    "target.input_wait": "Share of step time waiting on input",
    "target.loader_throughput": "Data-loader throughput",
    "target.checkpoint_time": "Checkpoint write time",
    "target.checkpoint_frequency": "Checkpoint interval",
    "target.failure_restart": "Job failure rate and restart time",
    "target.peak_vram": "Peak GPU memory against the estimate",
    "target.p95_p99": "p95 and p99 latency",
    "target.ttft": "Time to first token",
    "target.throughput_at_slo": "Throughput at the latency target",
    "target.kv_headroom": "KV-cache headroom",
    "target.cold_start": "Cold start (weights load) time",
    "target.promotion_time": "Artifact publish and promotion time",
    "target.restore_time": "Restore time from a checkpoint or rollback",
    "target.pool_cost": "Cost per pool and per workload",
    # ---- report -----------------------------------------------------------------------------
    "report.title": "Locked infrastructure profile",
    "report.decision": "Decision",
    "report.node": "Node",
    "report.declared": "Declared",
    "report.detected": "Detected",
    "report.fingerprint": "Fingerprint",
    "report.workloads": "Workloads",
    "report.memory": "Memory breakdown",
    "report.proofs": "Estimate against measurement",
    "report.latency": "Latency under concurrency",
    "report.roofline": "Roofline",
    "report.cost": "Cost",
    "report.deployment": "Deployment",
    "report.environment": "Environment",
    "report.notes": "Notes",
    "report.component": "Component",
    "report.bytes": "Bytes",
    "report.proof": "Proof",
    "report.estimate": "Estimate",
    "report.measured": "Measured",
    "report.ratio": "Ratio",
    "report.verdict": "Verdict",
    "report.flags": "Flags",
    "report.tolerance": "Tolerance",
    "report.use_when": "Use when",
    "report.infrastructure": "Infrastructure profile",
    "report.track": "What to track",
    "report.red_flags": "Red flags",
    "report.usd_per_mtok": "USD per million output tokens",
    "report.usd_per_run": "USD per training run",
    "report.none": "none recorded",
}
