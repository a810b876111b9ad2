"""`aiworkbook profile k8s-job PROFILE`: a ConfigMap holding the locked profile and a Job (or, with
--daemonset, a DaemonSet) that runs `aiworkbook check` on each GPU node (aiworkbook.profile.k8s)."""

from pathlib import Path

import typer

from aiworkbook.message import Msg

profile_app = typer.Typer(
    help="Take a locked profile to where checks run.", no_args_is_help=True, rich_markup_mode=None
)


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")


@profile_app.command("k8s-job")
def k8s_job(
    profile: Path = typer.Argument(..., help="A locked profile (aiworkbook lock)."),
    image: str = typer.Option(
        None, "--image", help="A container image with aiworkbook and torch (default: aiworkbook:<version>)."
    ),
    out: Path = typer.Option(None, "--out", "-o", help="Write the manifests here (default: print them)."),
    name: str = typer.Option("aiworkbook-check", "--name", help="Name of the Job/DaemonSet (DNS-1123)."),
    namespace: str = typer.Option(None, "--namespace", help="Namespace (default: kubectl's current)."),
    nodes: int = typer.Option(1, "--nodes", help="Job: how many GPU nodes to check, one pod per node."),
    gpus: int = typer.Option(
        None, "--gpus", help="nvidia.com/gpu per pod (default: the locked node's count)."
    ),
    product: str = typer.Option(
        None, "--product", help="nvidia.com/gpu.product to select (default: from the locked GPU's name)."
    ),
    mig_strategy: str = typer.Option(
        "mixed", "--mig-strategy", help="The device plugin's MIG strategy: mixed | single."
    ),
    daemonset: bool = typer.Option(False, "--daemonset", help="A DaemonSet re-checking every --interval."),
    interval: int = typer.Option(86400, "--interval", help="DaemonSet: seconds between checks (>= 60)."),
    textfile_dir: str = typer.Option(
        None,
        "--textfile-dir",
        help="Host folder of node_exporter's textfile collector (DaemonSet default: "
        "/var/lib/node_exporter/textfile_collector; Job: none).",
    ),
    as_json: bool = typer.Option(False, "--json", help="A JSON List instead of YAML."),
) -> None:
    """Kubernetes manifests: the profile as a ConfigMap and a Job (or DaemonSet) running `aiworkbook
    check` on GPU nodes (toleration for nvidia.com/gpu, node selector on nvidia.com/gpu.product, whole
    GPUs or the MIG slice it was locked on, requests = limits)."""
    from aiworkbook import __version__
    from aiworkbook.cli.paths import check_paths
    from aiworkbook.persist import atomic_write_text, dumps_json, read_text
    from aiworkbook.profile import load_profile
    from aiworkbook.profile.k8s import manifests, to_yaml

    if out is not None:
        check_paths({"profile": profile}, out=out)
    prof = load_profile(profile)
    docs = manifests(
        prof,
        read_text(profile, what=Msg("file.locked_profile")),
        name=name,
        image=image or f"aiworkbook:{__version__}",
        kind="daemonset" if daemonset else "job",
        namespace=namespace,
        nodes=nodes,
        gpus=gpus,
        product=product,
        mig_strategy=mig_strategy,
        textfile_dir=textfile_dir,
        interval_s=interval,
    )
    text = (
        dumps_json({"apiVersion": "v1", "kind": "List", "items": docs}, indent=2) + "\n"
        if as_json
        else to_yaml(docs)
    )
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(out, text)
        typer.echo(f"{docs[1]['kind']} and ConfigMap -> {out} (kubectl apply -f {out})", err=True)
