"""Widget labels in English, Dutch and German: one table per language with the same keys
(tests/test_widgets_i18n.py checks). Pattern texts come from aiworkbook.patterns, not from here."""

from __future__ import annotations

from typing import Any

from aiworkbook.errors import SpecError

LANGS: tuple[str, ...] = ("en", "nl", "de")

EN: dict[str, str] = {
    "error": "Error:",
    "working": "Working…",
    "stale": "Not updated: the figures below are from the last valid inputs.",
    "language": "Language",
    # pattern picker
    "recommend": "Recommend",
    "pattern": "Pattern",
    "reasons": "Why",
    "nodes": "Reference nodes",
    "proofs": "Proofs to run",
    "targets": "Figures to lock",
    # node picker
    "node": "Node",
    "this_node": "this node (detected)",
    "capabilities": "Capability matrix",
    "gpu": "GPU",
    "gpu_count": "GPUs",
    "gpu_memory": "GPU memory",
    "interconnect": "Interconnect",
    "cpu": "CPU cores",
    "ram": "RAM",
    "storage": "Local storage",
    "storage_read": "Storage read",
    "price": "Price per hour",
    "gpu_status": "GPU status",
    # model sizer
    "source": "Model from",
    "model": "Model",
    "preset": "preset",
    "family": "model family",
    "pasted": "pasted config.json",
    "uploaded": "uploaded config.json",
    "config": "config.json",
    "upload": "Upload config.json",
    "mode": "Mode",
    "batch": "Batch",
    "seq_len": "Sequence",
    "new_tokens": "New tokens",
    "concurrency": "Concurrency",
    "precision": "Precision",
    "recipe": "Recipe",
    "checkpointing": "Activation checkpointing",
    "tp": "Tensor parallel",
    "dp": "Data parallel",
    "zero": "ZeRO stage",
    "engine": "Engine",
    "weights_dtype": "Weights",
    "kv_dtype": "KV cache",
    "attention": "Attention",
    "finetune": "Fine-tuning",
    "compile": "torch.compile",
    "compile_loss": "Loss compiled too (off: torchtune's recipe at the time ran it eager)",
    "kv_repeat": "K/V copied to every query head (torchtune)",
    "chunked_loss": "Fused chunked loss",
    "loss_chunks": "Loss chunks",
    "optimizer_in_backward": "Optimizer step in backward",
    "l2_weight_decay": "Adam/SGD weight decay (L2 on the gradient)",
    "maximize": "Optimizer maximizes",
    "activation_offload": "Activations to host",
    "fsdp_cpu_offload": "FSDP CPU offload",
    "dropout": "Dropout",
    "lora_rank": "LoRA rank",
    "lora_targets": "LoRA targets",
    "host_memory": "Host memory (off GPU)",
    "offloaded_states": "training state",
    "offloaded_activations": "activations",
    "paged_optimizer": "paged optimizer",
    "per_mtok_trained": "per million tokens trained",
    "memory": "Memory per GPU",
    "rule_of_thumb": "Rule of thumb",
    "fits_on": "Fits on (catalogue)",
    "gpus_needed": "GPUs needed",
    "cost": "Cost",
    "fits": "fits",
    "does_not_fit": "does NOT fit",
    "headroom": "headroom",
    "per_mtok": "per million output tokens",
    "per_gpu_hour": "Price per GPU-hour",
    "headline": "{model}, {shape}: {verdict} on 1 × {gpu}, {headroom} {headroom_word}",
    "none_fit": "no catalogue GPU (up to 64-way tensor parallel)",
    # kv planner
    "context": "Context",
    "utilization": "GPU memory utilisation",
    "max_concurrency": "Max concurrency at {context} tokens",
    "max_context": "Max context at {n} sequences",
    "kv_per_seq": "KV cache per sequence",
    "kv_budget": "KV budget",
    "vllm_args": "vLLM arguments",
    # monitor
    "no_gpu": "no NVIDIA GPU found",
    "pause": "Pause",
    "resume": "Resume",
    "recorded": "Show the recorded trace",
    "live": "live",
    "host": "Host",
    "processes": "Processes",
    "throttle": "Throttle reasons",
    "fleet_refresh": "Refresh",
    "fleet_headline": "{nodes} node(s), {gpus} GPU(s) through {source}; readings scraped from the nodes, not measured here",
    "fleet_none": "no GPU series in the last {window} s at {source}",
    "fleet_stopped": "Series without data",
    "fleet_series": "Node and GPU",
    "fleet_metric": "Metric",
    "fleet_since": "No data since",
    # proof runner
    "proof": "Proof",
    "plan": "Plan",
    "run": "Run",
    "cancel": "Cancel",
    "predicted": "predicted",
    "measured": "measured",
    "verdict": "verdict",
    "flags": "honesty flags",
    "busy": "Another proof is running; try again when it has finished.",
    "runs_off": "Running proofs is switched off on this dashboard.",
    "rough": "roughly {seconds:.0f} s",
    # profile locker
    "profile": "Profile file",
    "lock": "Lock",
    "check": "Check",
    "report": "Report",
    "download": "Download the report",
    "unavailable": "not available in this installation: {what}",
    # what the sizer, KV planner and report dashboard say (issue 25)
    "needs": "needs {n} × {gpu}",
    "lowest_cost": "or {n} × {gpu} at the lowest cost",
    "short_by": "{short} short",
    "priced_on": "{price} per million output tokens on {n} × {gpu}",
    "priced_trained_on": "{price} per million tokens trained on {n} × {gpu}",
    "per_run": "per training run of {tokens} tokens",
    "budget_line": "Dashed line: the budget, {util} of the {gpu}'s memory that the engine may use; the itemised bar must stay under it to fit.",
    "rule_explained": "Right-hand bar: the rule of thumb, {ratio}× the itemised bar: a quick guess from the parameter count alone. Trust the itemised bar: it counts each component for this shape, precision and engine.",
    "beyond_positions": "an integer in [1, {max}]: {model} has {max} positions (max_position_embeddings)",
    "raise_tp": "The weights alone do not fit {box} × {gpu}: raise Tensor parallel to {tp}, the smallest size that fits.",
    "raise_tp_none": "The weights alone do not fit {box} × {gpu}, nor any tensor-parallel size up to 64: pick a larger GPU.",
    "args_need_tp": "# no arguments at tensor parallel {box}: the model does not fit; set Tensor parallel to {tp} for them",
    "empty_lock": "Nothing to lock yet: 0 proofs and 0 workloads. Run a proof or add the current sizing first, or press Lock again to lock an empty profile.",
    "add_sizing": "Add the current sizing",
    "no_sizing": "no sizing to add: link the locker to a sizer (locker.follow(sizer))",
    "sizing_added": "Added workload {name}: {model} on {gpu}",
    "download_profile": "Download the locked profile (JSON)",
    "download_check": "Download the check result (JSON)",
    "download_report": "Download the report (HTML)",
    "check_0": "Check passed: every result is within the profile's tolerance",
    "check_1": "Check failed: a result is outside the profile's tolerance",
    "check_2": "Check incomplete: nothing to compare (no locked proof, or a locked proof without a result)",
    "workloads": "workloads",
    "plan_line": "{proof}: predicts {predicted}; runs on {device}; takes {rough}",
    "plan_none": "{proof}: no prediction on {device} (the result is information only); runs on {device}; takes {rough}",
    "plan_inputs": "with {inputs}",
    "the_cpu": "the CPU",
    "the_gpu": "the GPU",
    # page: titles and introductions of the dashboards (the notebooks' text)
    "page.sizing.title": "Sizing: model → memory, GPUs, cost",
    "page.sizing.intro": "Pick a model and its shape: the answer (fits or not, on which GPUs, at what cost) comes "
    "first, the chart that explains it next, then the controls (a training mode adds the fine-tuning ones: "
    "torch.compile, chunked loss, offloading, LoRA rank and targets, with the host memory they take) and "
    "every formula behind the numbers. All figures come from aiworkbook.sizing, the same calls as "
    "`aiworkbook size`.",
    "page.kv.title": "KV cache and concurrency (inference)",
    "page.kv.intro": "How many sequences fit at a context length, and the engine arguments that reserve that "
    "memory. The planner follows the sizer's model and GPU.",
    "page.preflight.title": "Pre-flight on this GPU (vLLM)",
    "page.preflight.intro": "Will vllm serve start here now, next to what already holds the GPU? It reads the GPU "
    "(who holds what), applies vLLM's start-up rule and says the largest --gpu-memory-utilization that starts, "
    "with its KV cache: the same call as aiworkbook preflight vllm.",
    "page.monitor.title": "GPU monitor",
    "page.monitor.intro": "Utilisation, memory, power, temperature and throttle reasons from this machine's "
    "one shared sampler (2 Hz). Without an NVIDIA GPU the monitor says so, shows the host and offers a "
    "recorded trace, labelled as recorded. Started with --prometheus URL, it shows the fleet "
    "instead: every node and GPU that Prometheus scrapes, and since when a series has had no data.",
    "page.report.title": "Proofs and profile report",
    "page.report.intro": "Each proof shows its prediction before it runs, then the estimate next to what was "
    "measured on this node, with verdicts and honesty flags. The profile locks the decision and checks later "
    "runs against it. Proofs run only when the server was started with --allow-proofs, one at a time.",
    "page.report.lock_title": "Lock the profile and write the report",
    "page.report.workload_title": "A workload to lock: size it here, then press “Add the current sizing” above",
    # choices a drop-down offers (the value stays the library's; only the words shown change)
    "choice.infer": "inference",
    "choice.train": "full training",
    "choice.none": "none",
    "choice.follows the precision": "follows the precision",
    "choice.selective": "selective",
    "choice.full": "full",
    "tokens": "tokens",
    "cheapest": "cheapest: {n} × {gpu} at {price}/h",
    "error_line": "{field} = {value} is not valid; allowed: {allowed}",
    "ratio": "ratio",
    "on_device": "on",
    "device": "device",
    "bytes": "bytes",
    # proof inputs (the registry's InputSpec names) and their choices
    "input.model": "model",
    "input.device": "device",
    "input.quick": "quick run",
    "input.target": "target URL",
    "input.served_model": "served model",
    "input.scheduler": "scheduler",
    "input.backend": "backend",
    "input.rate": "request rate (per s)",
    "input.concurrency": "concurrency",
    "input.sweep": "sweep",
    "input.slo_ttft_ms": "SLO time to first token (ms)",
    "input.slo_tpot_ms": "SLO time per output token (ms)",
    "input.size_mb": "size (MB)",
    "input.dir": "folder",
    "input.format": "format",
    "input.formats": "formats",
    "input.gpus": "GPUs",
    "input.keep": "keep the files",
    "input.dtype": "dtype",
    "input.shards": "shards",
    "input.samples_per_shard": "samples per shard",
    "input.sample_kb": "sample size (KB)",
    "input.batch": "batch",
    "input.workers": "workers",
    "input.prefetch": "prefetch",
    "input.compute": "compute per step",
    "input.step_ms": "step time (ms)",
    "input.rows": "rows",
    "input.cols": "columns",
    "input.iterations": "iterations",
    "input.threads": "threads",
    "input.ranks": "ranks",
    "input.sizes": "sizes",
    "choice.auto": "automatic",
    "choice.static": "static",
    "choice.continuous": "continuous",
    "choice.synthetic": "synthetic",
    "choice.sleep": "sleep (no model)",
}

NL: dict[str, str] = {
    "error": "Fout:",
    "working": "Bezig…",
    "stale": "Niet bijgewerkt: de cijfers hieronder horen bij de laatste geldige invoer.",
    "language": "Taal",
    "recommend": "Aanbevelen",
    "pattern": "Patroon",
    "reasons": "Waarom",
    "nodes": "Referentienodes",
    "proofs": "Uit te voeren bewijzen",
    "targets": "Vast te leggen cijfers",
    "node": "Node",
    "this_node": "deze node (gedetecteerd)",
    "capabilities": "Capaciteitsmatrix",
    "gpu": "GPU",
    "gpu_count": "GPU's",
    "gpu_memory": "GPU-geheugen",
    "interconnect": "Interconnect",
    "cpu": "CPU-kernen",
    "ram": "RAM",
    "storage": "Lokale opslag",
    "storage_read": "Opslag lezen",
    "price": "Prijs per uur",
    "gpu_status": "GPU-status",
    "source": "Model uit",
    "model": "Model",
    "preset": "voorinstelling",
    "family": "modelfamilie",
    "pasted": "geplakte config.json",
    "uploaded": "geüploade config.json",
    "config": "config.json",
    "upload": "config.json uploaden",
    "mode": "Modus",
    "batch": "Batch",
    "seq_len": "Sequentie",
    "new_tokens": "Nieuwe tokens",
    "concurrency": "Gelijktijdig",
    "precision": "Precisie",
    "recipe": "Recept",
    "checkpointing": "Activatie-checkpointing",
    "tp": "Tensorparallel",
    "dp": "Dataparallel",
    "zero": "ZeRO-fase",
    "engine": "Engine",
    "weights_dtype": "Gewichten",
    "kv_dtype": "KV-cache",
    "attention": "Attention-kernel",
    "finetune": "Fijnafstemming",
    "compile": "torch.compile",
    "compile_loss": "Loss ook gecompileerd (uit: torchtunes recept draaide hem toen eager)",
    "kv_repeat": "K/V gekopieerd naar elke query-head (torchtune)",
    "chunked_loss": "Gefuseerde loss in blokken",
    "loss_chunks": "Loss-blokken",
    "optimizer_in_backward": "Optimizerstap in backward",
    "l2_weight_decay": "Adam/SGD-gewichtsverval (L2 op de gradiënt)",
    "maximize": "Optimizer maximaliseert",
    "activation_offload": "Activaties naar host",
    "fsdp_cpu_offload": "FSDP-CPU-offload",
    "dropout": "Dropout",
    "lora_rank": "LoRA-rang",
    "lora_targets": "LoRA-doelmodules",
    "host_memory": "Hostgeheugen (buiten de GPU)",
    "offloaded_states": "trainingstoestand",
    "offloaded_activations": "activaties",
    "paged_optimizer": "gepagede optimizer",
    "per_mtok_trained": "per miljoen getrainde tokens",
    "memory": "Geheugen per GPU",
    "rule_of_thumb": "Vuistregel",
    "fits_on": "Past op (catalogus)",
    "gpus_needed": "Benodigde GPU's",
    "cost": "Kosten",
    "fits": "past",
    "does_not_fit": "past NIET",
    "headroom": "ruimte over",
    "per_mtok": "per miljoen uitvoertokens",
    "per_gpu_hour": "Prijs per GPU-uur",
    "headline": "{model}, {shape}: {verdict} op 1 × {gpu}, {headroom} {headroom_word}",
    "none_fit": "geen GPU uit de catalogus (tot 64-voudig tensorparallel)",
    "context": "Context",
    "utilization": "Benutting GPU-geheugen",
    "max_concurrency": "Max. gelijktijdig bij {context} tokens",
    "max_context": "Max. context bij {n} sequenties",
    "kv_per_seq": "KV-cache per sequentie",
    "kv_budget": "KV-budget",
    "vllm_args": "vLLM-argumenten",
    "no_gpu": "geen NVIDIA-GPU gevonden",
    "pause": "Pauzeren",
    "resume": "Hervatten",
    "recorded": "Opgenomen trace tonen",
    "live": "live",
    "host": "Host",
    "processes": "Processen",
    "throttle": "Redenen voor afknijpen",
    "fleet_refresh": "Vernieuwen",
    "fleet_headline": "{nodes} node(s), {gpus} GPU('s) via {source}; metingen opgehaald bij de nodes, niet hier gemeten",
    "fleet_none": "geen GPU-reeksen in de laatste {window} s bij {source}",
    "fleet_stopped": "Reeksen zonder gegevens",
    "fleet_series": "Node en GPU",
    "fleet_metric": "Meetwaarde",
    "fleet_since": "Geen gegevens sinds",
    "proof": "Bewijs",
    "plan": "Plan",
    "run": "Uitvoeren",
    "cancel": "Annuleren",
    "predicted": "voorspeld",
    "measured": "gemeten",
    "verdict": "oordeel",
    "flags": "eerlijkheidsvlaggen",
    "busy": "Er loopt al een ander bewijs; probeer het opnieuw als dat klaar is.",
    "runs_off": "Bewijzen uitvoeren staat uit op dit dashboard.",
    "rough": "ongeveer {seconds:.0f} s",
    "profile": "Profielbestand",
    "lock": "Vastleggen",
    "check": "Controleren",
    "report": "Rapport",
    "download": "Rapport downloaden",
    "unavailable": "niet beschikbaar in deze installatie: {what}",
    # what the sizer, KV planner and report dashboard say (issue 25)
    "needs": "heeft {n} × {gpu} nodig",
    "lowest_cost": "of {n} × {gpu} tegen de laagste kosten",
    "short_by": "{short} tekort",
    "priced_on": "{price} per miljoen uitvoertokens op {n} × {gpu}",
    "priced_trained_on": "{price} per miljoen getrainde tokens op {n} × {gpu}",
    "per_run": "per trainingsrun van {tokens} tokens",
    "budget_line": "Stippellijn: het budget, {util} van het geheugen van de {gpu} dat de engine mag gebruiken; de gespecificeerde balk moet eronder blijven om te passen.",
    "rule_explained": "Rechterbalk: de vuistregel, {ratio}× de gespecificeerde balk: een snelle schatting uit alleen het aantal parameters. Vertrouw de gespecificeerde balk: die telt elk onderdeel voor deze vorm, precisie en engine.",
    "beyond_positions": "een geheel getal in [1, {max}]: {model} heeft {max} posities (max_position_embeddings)",
    "raise_tp": "Alleen de gewichten passen al niet op {box} × {gpu}: verhoog Tensorparallel naar {tp}, de kleinste grootte die past.",
    "raise_tp_none": "Alleen de gewichten passen al niet op {box} × {gpu}, en op geen tensorparallelle grootte tot 64: kies een grotere GPU.",
    "args_need_tp": "# geen argumenten bij tensorparallel {box}: het model past niet; zet Tensorparallel op {tp}",
    "empty_lock": "Nog niets vast te leggen: 0 bewijzen en 0 workloads. Voer eerst een bewijs uit of voeg de huidige dimensionering toe, of druk nogmaals op Vastleggen voor een leeg profiel.",
    "add_sizing": "Huidige dimensionering toevoegen",
    "no_sizing": "geen dimensionering om toe te voegen: koppel de locker aan een sizer (locker.follow(sizer))",
    "sizing_added": "Workload {name} toegevoegd: {model} op {gpu}",
    "download_profile": "Vastgelegd profiel downloaden (JSON)",
    "download_check": "Controleresultaat downloaden (JSON)",
    "download_report": "Rapport downloaden (HTML)",
    "check_0": "Controle geslaagd: elk resultaat valt binnen de tolerantie van het profiel",
    "check_1": "Controle mislukt: een resultaat valt buiten de tolerantie van het profiel",
    "check_2": "Controle onvolledig: niets te vergelijken (geen vastgelegd bewijs, of een vastgelegd bewijs zonder resultaat)",
    "workloads": "workloads",
    "plan_line": "{proof}: voorspelt {predicted}; draait op {device}; duurt {rough}",
    "plan_none": "{proof}: geen voorspelling op {device} (het resultaat is alleen informatie); draait op {device}; duurt {rough}",
    "plan_inputs": "met {inputs}",
    "the_cpu": "de CPU",
    "the_gpu": "de GPU",
    "page.sizing.title": "Dimensionering: model → geheugen, GPU's, kosten",
    "page.sizing.intro": "Kies een model en zijn vorm: eerst het antwoord (past het of niet, op welke GPU's, "
    "tegen welke kosten), daarna de grafiek die het verklaart, dan de instellingen (een trainingsmodus voegt "
    "die voor fijnafstemming toe: torch.compile, loss in blokken, offloading, LoRA-rang en -doelmodules, met "
    "het hostgeheugen dat ze innemen) en elke formule achter de cijfers. Alle cijfers komen uit "
    "aiworkbook.sizing, dezelfde aanroepen als `aiworkbook size`.",
    "page.kv.title": "KV-cache en gelijktijdigheid (inferentie)",
    "page.kv.intro": "Hoeveel sequenties passen bij een contextlengte, en de engine-argumenten die dat "
    "geheugen reserveren. De planner volgt het model en de GPU van de sizer.",
    "page.preflight.title": "Pre-flight op deze GPU (vLLM)",
    "page.preflight.intro": "Start vllm serve hier nu, naast wat de GPU al bezet houdt? Het leest de GPU (wie "
    "houdt wat vast), past de opstartregel van vLLM toe en noemt de hoogste --gpu-memory-utilization die start, "
    "met de KV-cache die dat geeft: dezelfde aanroep als aiworkbook preflight vllm.",
    "page.monitor.title": "GPU-monitor",
    "page.monitor.intro": "Benutting, geheugen, vermogen, temperatuur en redenen voor afknijpen, uit de ene "
    "gedeelde sampler van deze machine (2 Hz). Zonder NVIDIA-GPU zegt de monitor dat, toont hij de host en "
    "biedt hij een opgenomen trace aan, als opname gemarkeerd. Gestart met --prometheus URL toont hij "
    "in plaats daarvan de vloot: elke node en GPU die Prometheus uitleest, en sinds wanneer een reeks geen "
    "gegevens meer heeft.",
    "page.report.title": "Bewijzen en profielrapport",
    "page.report.intro": "Elk bewijs toont zijn voorspelling voordat het draait, daarna de schatting naast "
    "wat op deze node gemeten is, met oordelen en eerlijkheidsvlaggen. Het profiel legt de beslissing vast "
    "en toetst latere runs eraan. Bewijzen draaien alleen als de server met --allow-proofs gestart is, één "
    "tegelijk.",
    "page.report.lock_title": "Profiel vastleggen en rapport schrijven",
    "page.report.workload_title": "Een workload om vast te leggen: dimensioneer hem hier en druk dan hierboven op “Huidige dimensionering toevoegen”",
    "choice.infer": "inferentie",
    "choice.train": "volledige training",
    "choice.none": "geen",
    "choice.follows the precision": "volgt de precisie",
    "choice.selective": "selectief",
    "choice.full": "volledig",
    "tokens": "tokens",
    "cheapest": "goedkoopst: {n} × {gpu} voor {price}/u",
    "error_line": "{field} = {value} is niet geldig; toegestaan: {allowed}",
    "ratio": "verhouding",
    "on_device": "op",
    "device": "apparaat",
    "bytes": "bytes",
    "input.model": "model",
    "input.device": "apparaat",
    "input.quick": "snelle run",
    "input.target": "doel-URL",
    "input.served_model": "geserveerd model",
    "input.scheduler": "scheduler",
    "input.backend": "backend",
    "input.rate": "verzoeken per seconde",
    "input.concurrency": "gelijktijdig",
    "input.sweep": "reeks",
    "input.slo_ttft_ms": "SLO tijd tot eerste token (ms)",
    "input.slo_tpot_ms": "SLO tijd per uitvoertoken (ms)",
    "input.size_mb": "grootte (MB)",
    "input.dir": "map",
    "input.format": "formaat",
    "input.formats": "formaten",
    "input.gpus": "GPU's",
    "input.keep": "bestanden bewaren",
    "input.dtype": "dtype",
    "input.shards": "shards",
    "input.samples_per_shard": "voorbeelden per shard",
    "input.sample_kb": "grootte voorbeeld (KB)",
    "input.batch": "batch",
    "input.workers": "workers",
    "input.prefetch": "vooraf laden",
    "input.compute": "rekenwerk per stap",
    "input.step_ms": "staptijd (ms)",
    "input.rows": "rijen",
    "input.cols": "kolommen",
    "input.iterations": "iteraties",
    "input.threads": "threads",
    "input.ranks": "ranks",
    "input.sizes": "groottes",
    "choice.auto": "automatisch",
    "choice.static": "statisch",
    "choice.continuous": "continu",
    "choice.synthetic": "synthetisch",
    "choice.sleep": "wachten (geen model)",
}

DE: dict[str, str] = {
    "error": "Fehler:",
    "working": "In Arbeit…",
    "stale": "Nicht aktualisiert: die Zahlen unten stammen von den letzten gültigen Eingaben.",
    "language": "Sprache",
    "recommend": "Empfehlen",
    "pattern": "Muster",
    "reasons": "Warum",
    "nodes": "Referenzknoten",
    "proofs": "Auszuführende Nachweise",
    "targets": "Festzuhaltende Kennzahlen",
    "node": "Knoten",
    "this_node": "dieser Knoten (erkannt)",
    "capabilities": "Fähigkeitsmatrix",
    "gpu": "GPU",
    "gpu_count": "GPUs",
    "gpu_memory": "GPU-Speicher",
    "interconnect": "Interconnect",
    "cpu": "CPU-Kerne",
    "ram": "RAM",
    "storage": "Lokaler Speicher",
    "storage_read": "Speicher lesen",
    "price": "Preis pro Stunde",
    "gpu_status": "GPU-Status",
    "source": "Modell aus",
    "model": "Modell",
    "preset": "Vorgabe",
    "family": "Modellfamilie",
    "pasted": "eingefügte config.json",
    "uploaded": "hochgeladene config.json",
    "config": "config.json",
    "upload": "config.json hochladen",
    "mode": "Modus",
    "batch": "Batch",
    "seq_len": "Sequenz",
    "new_tokens": "Neue Tokens",
    "concurrency": "Gleichzeitig",
    "precision": "Präzision",
    "recipe": "Rezept",
    "checkpointing": "Aktivierungs-Checkpointing",
    "tp": "Tensor-parallel",
    "dp": "Daten-parallel",
    "zero": "ZeRO-Stufe",
    "engine": "Engine",
    "weights_dtype": "Gewichte",
    "kv_dtype": "KV-Cache",
    "attention": "Attention-Kernel",
    "finetune": "Feinabstimmung",
    "compile": "torch.compile",
    "compile_loss": "Loss ebenfalls kompiliert (aus: torchtunes Rezept lief damals eager)",
    "kv_repeat": "K/V in jeden Query-Kopf kopiert (torchtune)",
    "chunked_loss": "Fusionierter Loss in Blöcken",
    "loss_chunks": "Loss-Blöcke",
    "optimizer_in_backward": "Optimizer-Schritt im Backward",
    "l2_weight_decay": "Adam/SGD-Weight-Decay (L2 auf dem Gradienten)",
    "maximize": "Optimizer maximiert",
    "activation_offload": "Aktivierungen auf den Host",
    "fsdp_cpu_offload": "FSDP-CPU-Offload",
    "dropout": "Dropout",
    "lora_rank": "LoRA-Rang",
    "lora_targets": "LoRA-Zielmodule",
    "host_memory": "Host-Speicher (außerhalb der GPU)",
    "offloaded_states": "Trainingszustand",
    "offloaded_activations": "Aktivierungen",
    "paged_optimizer": "ausgelagerter Optimizer (paged)",
    "per_mtok_trained": "pro Million trainierter Tokens",
    "memory": "Speicher pro GPU",
    "rule_of_thumb": "Faustregel",
    "fits_on": "Passt auf (Katalog)",
    "gpus_needed": "Benötigte GPUs",
    "cost": "Kosten",
    "fits": "passt",
    "does_not_fit": "passt NICHT",
    "headroom": "Reserve",
    "per_mtok": "pro Million Ausgabetokens",
    "per_gpu_hour": "Preis pro GPU-Stunde",
    "headline": "{model}, {shape}: {verdict} auf 1 × {gpu}, {headroom} {headroom_word}",
    "none_fit": "keine Katalog-GPU (bis 64-fach tensor-parallel)",
    "context": "Kontext",
    "utilization": "GPU-Speicherauslastung",
    "max_concurrency": "Max. gleichzeitig bei {context} Tokens",
    "max_context": "Max. Kontext bei {n} Sequenzen",
    "kv_per_seq": "KV-Cache pro Sequenz",
    "kv_budget": "KV-Budget",
    "vllm_args": "vLLM-Argumente",
    "no_gpu": "keine NVIDIA-GPU gefunden",
    "pause": "Anhalten",
    "resume": "Fortsetzen",
    "recorded": "Aufgezeichnete Spur zeigen",
    "live": "live",
    "host": "Host",
    "processes": "Prozesse",
    "throttle": "Drosselungsgründe",
    "fleet_refresh": "Aktualisieren",
    "fleet_headline": "{nodes} Knoten, {gpus} GPU(s) über {source}; Messwerte von den Knoten abgefragt, nicht hier gemessen",
    "fleet_none": "keine GPU-Reihen in den letzten {window} s bei {source}",
    "fleet_stopped": "Reihen ohne Daten",
    "fleet_series": "Knoten und GPU",
    "fleet_metric": "Messgröße",
    "fleet_since": "Keine Daten seit",
    "proof": "Nachweis",
    "plan": "Plan",
    "run": "Ausführen",
    "cancel": "Abbrechen",
    "predicted": "vorhergesagt",
    "measured": "gemessen",
    "verdict": "Urteil",
    "flags": "Ehrlichkeits-Flags",
    "busy": "Ein anderer Nachweis läuft; bitte erneut versuchen, wenn er fertig ist.",
    "runs_off": "Nachweise sind auf diesem Dashboard abgeschaltet.",
    "rough": "etwa {seconds:.0f} s",
    "profile": "Profildatei",
    "lock": "Festschreiben",
    "check": "Prüfen",
    "report": "Bericht",
    "download": "Bericht herunterladen",
    "unavailable": "in dieser Installation nicht verfügbar: {what}",
    # what the sizer, KV planner and report dashboard say (issue 25)
    "needs": "braucht {n} × {gpu}",
    "lowest_cost": "oder {n} × {gpu} zu den geringsten Kosten",
    "short_by": "{short} zu wenig",
    "priced_on": "{price} pro Million Ausgabe-Tokens auf {n} × {gpu}",
    "priced_trained_on": "{price} pro Million trainierter Tokens auf {n} × {gpu}",
    "per_run": "pro Trainingslauf mit {tokens} Tokens",
    "budget_line": "Gestrichelte Linie: das Budget, {util} des Speichers der {gpu}, den die Engine nutzen darf; der aufgeschlüsselte Balken muss darunter bleiben.",
    "rule_explained": "Rechter Balken: die Faustregel, {ratio}× der aufgeschlüsselte Balken: eine schnelle Schätzung allein aus der Parameterzahl. Vertrauen Sie dem aufgeschlüsselten Balken: er zählt jede Komponente für diese Form, Präzision und Engine.",
    "beyond_positions": "eine ganze Zahl in [1, {max}]: {model} hat {max} Positionen (max_position_embeddings)",
    "raise_tp": "Schon die Gewichte passen nicht auf {box} × {gpu}: Tensor-parallel auf {tp} erhöhen, die kleinste Größe, die passt.",
    "raise_tp_none": "Schon die Gewichte passen nicht auf {box} × {gpu}, auch nicht bei Tensor-parallel bis 64: eine größere GPU wählen.",
    "args_need_tp": "# keine Argumente bei Tensor-parallel {box}: das Modell passt nicht; Tensor-parallel auf {tp} setzen",
    "empty_lock": "Noch nichts festzulegen: 0 Nachweise und 0 Workloads. Zuerst einen Nachweis ausführen oder die aktuelle Dimensionierung hinzufügen, oder erneut Festlegen drücken für ein leeres Profil.",
    "add_sizing": "Aktuelle Dimensionierung hinzufügen",
    "no_sizing": "keine Dimensionierung zum Hinzufügen: den Locker mit einem Sizer verbinden (locker.follow(sizer))",
    "sizing_added": "Workload {name} hinzugefügt: {model} auf {gpu}",
    "download_profile": "Festgelegtes Profil herunterladen (JSON)",
    "download_check": "Prüfergebnis herunterladen (JSON)",
    "download_report": "Bericht herunterladen (HTML)",
    "check_0": "Prüfung bestanden: jedes Ergebnis liegt in der Toleranz des Profils",
    "check_1": "Prüfung fehlgeschlagen: ein Ergebnis liegt außerhalb der Toleranz des Profils",
    "check_2": "Prüfung unvollständig: nichts zu vergleichen (kein festgelegter Nachweis, oder einer ohne Ergebnis)",
    "workloads": "Workloads",
    "plan_line": "{proof}: sagt {predicted} voraus; läuft auf {device}; dauert {rough}",
    "plan_none": "{proof}: keine Vorhersage auf {device} (das Ergebnis ist nur Information); läuft auf {device}; dauert {rough}",
    "plan_inputs": "mit {inputs}",
    "the_cpu": "der CPU",
    "the_gpu": "der GPU",
    "page.sizing.title": "Dimensionierung: Modell → Speicher, GPUs, Kosten",
    "page.sizing.intro": "Wählen Sie ein Modell und seine Form: zuerst die Antwort (passt es oder nicht, auf "
    "welchen GPUs, zu welchen Kosten), dann das Diagramm, das sie erklärt, dann die Einstellungen (ein "
    "Trainingsmodus fügt die der Feinabstimmung hinzu: torch.compile, Loss in Blöcken, Auslagerung, LoRA-Rang "
    "und -Zielmodule, mit dem Host-Speicher, den sie belegen) und jede Formel hinter den Zahlen. Alle Zahlen "
    "stammen aus aiworkbook.sizing, denselben Aufrufen wie `aiworkbook size`.",
    "page.kv.title": "KV-Cache und Gleichzeitigkeit (Inferenz)",
    "page.kv.intro": "Wie viele Sequenzen bei einer Kontextlänge passen, und die Engine-Argumente, die diesen "
    "Speicher reservieren. Der Planer folgt dem Modell und der GPU des Sizers.",
    "page.preflight.title": "Pre-Flight auf dieser GPU (vLLM)",
    "page.preflight.intro": "Startet vllm serve hier jetzt, neben dem, was die GPU schon belegt? Es liest die GPU "
    "(wer hält was), wendet die Startregel von vLLM an und nennt die größte --gpu-memory-utilization, die startet, "
    "mit dem KV-Cache, den das ergibt: derselbe Aufruf wie aiworkbook preflight vllm.",
    "page.monitor.title": "GPU-Monitor",
    "page.monitor.intro": "Auslastung, Speicher, Leistung, Temperatur und Drosselungsgründe aus dem einen "
    "gemeinsamen Sampler dieser Maschine (2 Hz). Ohne NVIDIA-GPU sagt der Monitor das, zeigt den Host und "
    "bietet eine aufgezeichnete Spur an, als Aufzeichnung gekennzeichnet. Mit --prometheus URL gestartet, "
    "zeigt er stattdessen die Flotte: jeden Knoten und jede GPU, die Prometheus abfragt, und seit wann eine Reihe "
    "keine Daten mehr hat.",
    "page.report.title": "Nachweise und Profilbericht",
    "page.report.intro": "Jeder Nachweis zeigt seine Vorhersage, bevor er läuft, dann die Schätzung neben dem, "
    "was auf diesem Knoten gemessen wurde, mit Urteilen und Ehrlichkeits-Flags. Das Profil schreibt die "
    "Entscheidung fest und prüft spätere Läufe dagegen. Nachweise laufen nur, wenn der Server mit "
    "--allow-proofs gestartet wurde, einer nach dem anderen.",
    "page.report.lock_title": "Profil festschreiben und Bericht schreiben",
    "page.report.workload_title": "Eine Arbeitslast zum Festschreiben: hier dimensionieren, dann oben „Aktuelle Dimensionierung hinzufügen“ drücken",
    "choice.infer": "Inferenz",
    "choice.train": "volles Training",
    "choice.none": "keins",
    "choice.follows the precision": "folgt der Präzision",
    "choice.selective": "selektiv",
    "choice.full": "vollständig",
    "tokens": "Tokens",
    "cheapest": "am günstigsten: {n} × {gpu} für {price}/h",
    "error_line": "{field} = {value} ist nicht gültig; erlaubt: {allowed}",
    "ratio": "Verhältnis",
    "on_device": "auf",
    "device": "Gerät",
    "bytes": "Bytes",
    "input.model": "Modell",
    "input.device": "Gerät",
    "input.quick": "schneller Lauf",
    "input.target": "Ziel-URL",
    "input.served_model": "bereitgestelltes Modell",
    "input.scheduler": "Scheduler",
    "input.backend": "Backend",
    "input.rate": "Anfragen pro Sekunde",
    "input.concurrency": "gleichzeitig",
    "input.sweep": "Reihe",
    "input.slo_ttft_ms": "SLO Zeit bis zum ersten Token (ms)",
    "input.slo_tpot_ms": "SLO Zeit pro Ausgabetoken (ms)",
    "input.size_mb": "Größe (MB)",
    "input.dir": "Ordner",
    "input.format": "Format",
    "input.formats": "Formate",
    "input.gpus": "GPUs",
    "input.keep": "Dateien behalten",
    "input.dtype": "dtype",
    "input.shards": "Shards",
    "input.samples_per_shard": "Beispiele pro Shard",
    "input.sample_kb": "Größe eines Beispiels (KB)",
    "input.batch": "Batch",
    "input.workers": "Worker",
    "input.prefetch": "Vorabladen",
    "input.compute": "Rechenarbeit pro Schritt",
    "input.step_ms": "Schrittzeit (ms)",
    "input.rows": "Zeilen",
    "input.cols": "Spalten",
    "input.iterations": "Iterationen",
    "input.threads": "Threads",
    "input.ranks": "Ranks",
    "input.sizes": "Größen",
    "choice.auto": "automatisch",
    "choice.static": "statisch",
    "choice.continuous": "kontinuierlich",
    "choice.synthetic": "synthetisch",
    "choice.sleep": "warten (kein Modell)",
}

TABLES: dict[str, dict[str, str]] = {"en": EN, "nl": NL, "de": DE}


def check_lang(lang: Any) -> str:
    if lang not in TABLES:
        raise SpecError("lang", lang, ", ".join(LANGS))
    return str(lang)


def label(key: str, lang: str = "en", **fmt: Any) -> str:
    """The label `key` in `lang`, formatted with `fmt`; SpecError for an unknown language or key."""
    table = TABLES[check_lang(lang)]
    if key not in table:
        from aiworkbook.patterns.i18n import TABLES as TEXTS

        shared = TEXTS[lang].get(key)  # one catalog: the library's texts (charts, report) answer too
        if not isinstance(shared, str):
            raise SpecError("label", key, "a key of the widget label tables")
        return shared.format(**fmt) if fmt else shared
    return table[key].format(**fmt) if fmt else table[key]


def choice(value: Any, lang: str = "en") -> str:
    """What a drop-down shows for the library's `value`: `choice.<value>` from the table, a pattern's
    title, else the value itself (dtype, recipe and engine names read the same in every language)."""
    found = TABLES[check_lang(lang)].get(f"choice.{value}")
    if found is None:
        from aiworkbook.patterns.i18n import TABLES as TEXTS

        title = TEXTS[lang].get(f"pattern.{value}.title", TEXTS[lang].get(f"proof.{value}.title"))
        found = title if isinstance(title, str) else None  # a pattern or a proof reads as its title
    return found if found is not None else str(value)


#: Names of the languages, each in its own language (the switch shows them so).
NATIVE = {"en": "English", "nl": "Nederlands", "de": "Deutsch"}


def page_lang(default: str | None = None) -> str:
    """The language of this dashboard page: `?lang=` of the viewer's URL (Voilà puts the query in the
    kernel's QUERY_STRING), else `aiworkbook app --lang` (the AIWORKBOOK_LANG variable), else English.
    An unknown language falls back rather than failing: a typo in a URL never breaks the page."""
    import os
    from urllib.parse import parse_qs

    from aiworkbook.i18n_format import LANG_ENV  # not aiworkbook.cli: typer and the CLI at every start

    asked = parse_qs(os.environ.get("QUERY_STRING", "")).get("lang", [None])[-1]
    for lang in (asked, os.environ.get(LANG_ENV), default):
        if lang in TABLES:
            return str(lang)
    return "en"


def switch_html(lang: str) -> str:
    """A small drop-down of the three languages; choosing one reloads the page with `?lang=` (the
    widgets are built in one language, so a reload re-renders every word and number at once)."""
    import html

    opts = "".join(
        f'<option value="{code}"{" selected" if code == lang else ""}>{NATIVE[code]}</option>'
        for code in LANGS
    )
    return (
        '<form method="get" class="aiwb-lang" style="float:right;margin:0 0 0 1em">'
        f"<label>{html.escape(label('language', lang))} "
        f'<select name="lang" onchange="this.form.submit()">{opts}</select></label></form>'
    )


def page_header(key: str, lang: str, intro: bool = True, switch: bool = True) -> Any:
    """A dashboard's language switch, title (`page.<key>.title`) and introduction (`page.<key>.intro`)
    in `lang`: one widget, so they render together."""
    import html

    import ipywidgets as W

    text = switch_html(lang) if switch else ""
    text += f"<h1>{html.escape(label(f'page.{key}.title', lang))}</h1>"
    if intro:
        text += f"<p>{html.escape(label(f'page.{key}.intro', lang))}</p>"
    w = W.HTML(text)
    w.add_class("aiwb-page-header")
    return w


def section(key: str, lang: str) -> Any:
    """A section heading of a dashboard in `lang`."""
    import html

    import ipywidgets as W

    return W.HTML(f"<h2>{html.escape(label(key, lang))}</h2>")


#: the names of a proof plan's settings (Plan.sizes keys) in Dutch and German; English shows the
#: library's name with spaces ("disk needed"). A key missing here shows as that English name, which the
#: English-left test (tests/test_lang.py) reports.
SIZE_NAMES: dict[str, dict[str, str]] = {
    "nl": {
        "available_ram": "beschikbaar RAM",
        "backend": "backend",
        "batch": "batch",
        "batches": "batches",
        "budget": "budget",
        "buffer": "buffer",
        "burstiness": "burstigheid",
        "cache": "cache",
        "cols": "kolommen",
        "compare": "vergelijken",
        "concurrency": "gelijktijdigheid",
        "configs": "configuraties",
        "connect_timeout_s": "verbindingstime-out (s)",
        "context_concurrency": "gelijktijdigheid contextreeks",
        "context_sweep": "contextreeks",
        "contexts": "contexten",
        "cooldown_s": "afkoelen (s)",
        "data": "gegevens",
        "dataset": "dataset",
        "deadline": "deadline",
        "disk_needed": "schijf nodig",
        "dtype": "datatype",
        "dtypes": "datatypes",
        "estimate_resumable": "schatting hervatbaar",
        "estimate_write_s": "schatting schrijven (s)",
        "formats": "formaten",
        "iterations": "iteraties",
        "kind": "soort",
        "loads": "belastingen",
        "max_duration_s": "max. duur (s)",
        "max_error_rate": "max. foutfractie",
        "model": "model",
        "new_tokens": "nieuwe tokens",
        "output_tokens": "uitvoertokens",
        "params": "parameters",
        "precision": "precisie",
        "prompt_tokens": "prompttokens",
        "quick": "snel",
        "ran": "gedraaid",
        "ranks": "ranks",
        "rate": "tempo",
        "request_timeout_s": "verzoektime-out (s)",
        "requests": "verzoeken",
        "rows": "rijen",
        "sample": "voorbeeld",
        "samples": "voorbeelden",
        "scheduler": "planner",
        "seq_len": "sequentielengte",
        "shapes": "vormen",
        "shards": "shards",
        "sizes": "groottes",
        "slo_tpot_s": "SLO tijd per token (s)",
        "slo_ttft_s": "SLO tijd tot eerste token (s)",
        "state": "toestand",
        "steps": "stappen",
        "threads": "threads",
        "trials": "herhalingen",
        "warmup_s": "opwarmen (s)",
        "weights": "gewichten",
        "workload_point": "werkpunt",
    },
    "de": {
        "available_ram": "verfügbarer RAM",
        "backend": "Backend",
        "batch": "Batch",
        "batches": "Batches",
        "budget": "Budget",
        "buffer": "Puffer",
        "burstiness": "Burstigkeit",
        "cache": "Cache",
        "cols": "Spalten",
        "compare": "Vergleich",
        "concurrency": "Parallelität",
        "configs": "Konfigurationen",
        "connect_timeout_s": "Verbindungs-Timeout (s)",
        "context_concurrency": "Parallelität der Kontextreihe",
        "context_sweep": "Kontextreihe",
        "contexts": "Kontexte",
        "cooldown_s": "Abkühlen (s)",
        "data": "Daten",
        "dataset": "Datensatz",
        "deadline": "Frist",
        "disk_needed": "Platte nötig",
        "dtype": "Datentyp",
        "dtypes": "Datentypen",
        "estimate_resumable": "Schätzung fortsetzbar",
        "estimate_write_s": "Schätzung Schreiben (s)",
        "formats": "Formate",
        "iterations": "Iterationen",
        "kind": "Art",
        "loads": "Lasten",
        "max_duration_s": "max. Dauer (s)",
        "max_error_rate": "max. Fehleranteil",
        "model": "Modell",
        "new_tokens": "neue Tokens",
        "output_tokens": "Ausgabetokens",
        "params": "Parameter",
        "precision": "Präzision",
        "prompt_tokens": "Prompt-Tokens",
        "quick": "schnell",
        "ran": "gelaufen",
        "ranks": "Ranks",
        "rate": "Rate",
        "request_timeout_s": "Anfrage-Timeout (s)",
        "requests": "Anfragen",
        "rows": "Zeilen",
        "sample": "Beispiel",
        "samples": "Beispiele",
        "scheduler": "Scheduler",
        "seq_len": "Sequenzlänge",
        "shapes": "Formen",
        "shards": "Shards",
        "sizes": "Größen",
        "slo_tpot_s": "SLO Zeit pro Token (s)",
        "slo_ttft_s": "SLO Zeit bis zum ersten Token (s)",
        "state": "Zustand",
        "steps": "Schritte",
        "threads": "Threads",
        "trials": "Wiederholungen",
        "warmup_s": "Aufwärmen (s)",
        "weights": "Gewichte",
        "workload_point": "Arbeitspunkt",
    },
}


def size_name(key: str, lang: str) -> str:
    """A plan setting's name in `lang` (its `_bytes` suffix already dropped by the caller)."""
    return SIZE_NAMES.get(lang, {}).get(key, key.replace("_", " "))


def yes_no(value: bool, lang: str) -> str:
    """A plan setting's on/off in `lang`."""
    words = {"en": ("yes", "no"), "nl": ("ja", "nee"), "de": ("ja", "nein")}.get(lang, ("yes", "no"))
    return words[0] if value else words[1]
