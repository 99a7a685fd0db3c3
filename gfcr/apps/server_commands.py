"""The server commands of `gfcr`: a model over an OpenAI-compatible API (`serve`), an env over
the OpenEnv protocol (`serve-env`).

gfcr serve runs/tiny-model --port 8000
gfcr serve-env gfcr/Math-v0 -e split=AIME2024 --port 8001
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gfcr.apps.connections import ConnectionLimits
from gfcr.apps.options import EnvArgs, Imports, config_arguments, config_options, parse_env_args
from gfcr.apps.terminal import console, exit_on_error
from gfcr.core.admission import AdmissionConfig
from gfcr.errors import needs_extra
from gfcr.registry import import_modules


def serve(
    model: Annotated[
        str, typer.Argument(help="Model directory (transformers format), e.g. from `gfcr tiny-model`.")
    ],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    name: Annotated[
        str | None, typer.Option(help="Model name clients ask for (default: MODEL as given).")
    ] = None,
    allow_weight_updates: Annotated[
        bool,
        typer.Option(
            help="Open POST /v1/weights: anyone who reaches the server may make it load weights "
            "from a path on its disk (a trainer's pushes; keep such a server on a trusted network)."
        ),
    ] = False,
) -> None:
    """Serve a local model over an OpenAI-compatible API (/v1/chat/completions with tools, /v1/models)."""
    with exit_on_error():
        with needs_extra("gfcr serve"):
            from gfcr.apps.serve import serve as run_server
        console.print(
            f"serving {name or model} at http://{host}:{port}/v1  (agent spec: openai:{name or model}@http://{host}:{port}/v1)"
        )
        with needs_extra("gfcr serve"):
            run_server(
                model, host=host, port=port, model_name=name, allow_weight_updates=allow_weight_updates
            )


@config_options(AdmissionConfig, param="admission", panel="Admission (env calls at once, over all sessions)")
@config_options(
    ConnectionLimits, param="limits", aliases={"read_timeout_s": ["--read-timeout"]}, panel="Connections"
)
def serve_env(
    env_id: Annotated[str, typer.Argument(help="Env id to serve, e.g. gfcr/Math-v0 (see `gfcr list`).")],
    env_args: EnvArgs = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    max_sessions: Annotated[
        int, typer.Option(help="Sessions (one env each) at once; more are refused.")
    ] = 64,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds a session may sit idle before it is closed (0: never).")
    ] = 600.0,
    token: Annotated[
        str | None,
        typer.Option(envvar="GFCR_SERVE_TOKEN", help="Bearer token clients must send (default: none)."),
    ] = None,
    max_request_bytes: Annotated[int, typer.Option(help="Largest request or WebSocket message.")] = 1 << 20,
    send_gold: Annotated[
        bool,
        typer.Option(
            "--send-gold",
            help="Send tasks' gold data (answers, gold SQL, tests) and metadata to clients: only for trusted "
            "trainer-side clients such as the scripted oracle; agents must not see them. Rewards are "
            "computed on the server either way.",
        ),
    ] = False,
    imports: Imports = None,
    deployment: Annotated[
        Path | None,
        typer.Option(
            "--write-deployment",
            help="Write a Dockerfile and openenv.yaml serving this env with these options to DIR; exit.",
            rich_help_panel="Deployment",
        ),
    ] = None,
    wheelhouse: Annotated[
        Path | None,
        typer.Option(
            help="The image installs gfcr from the wheels in DIR, with no index (builds without network).",
            rich_help_panel="Deployment",
        ),
    ] = None,
    install: Annotated[
        list[str] | None,
        typer.Option(
            help="A package the image installs beside gfcr (a plugin env's); repeatable.",
            rich_help_panel="Deployment",
        ),
    ] = None,
    *,
    admission: AdmissionConfig,
    limits: ConnectionLimits,
) -> None:
    """Serve an env over the OpenEnv protocol (HTTP and WebSocket; openenv's clients, TRL, gfcr/Remote-v0)."""
    with exit_on_error():
        with needs_extra("gfcr serve-env"):
            from gfcr.remote import serve_env as run_server
            from gfcr.remote.deployment import image_name, write_deployment
        kwargs = parse_env_args(env_args or [])
        import_modules(imports or [])
        if deployment is not None:
            options = [
                *(a for pair in env_args or [] for a in ("--env-arg", pair)),
                *(a for module in imports or [] for a in ("--import", module)),
                *("--max-sessions", str(max_sessions), "--idle-timeout", str(idle_timeout)),
                *("--max-request-bytes", str(max_request_bytes), *(["--send-gold"] if send_gold else [])),
                *config_arguments(admission),
                *config_arguments(limits),
            ]
            written = write_deployment(
                deployment, env_id, options, port=port, requirements=install or [], wheelhouse=wheelhouse
            )
            names = ", ".join(p.name for p in written)
            console.print(f"wrote {names} to {deployment}: docker build -t {image_name(env_id)} {deployment}")
            if token:
                console.print("the token is not in the image: docker run -e GFCR_SERVE_TOKEN=... gives it")
            return
        console.print(
            f"serving {env_id} at http://{host}:{port}  "
            f"(gfcr: gym.make('gfcr/Remote-v0', url='http://{host}:{port}'); openenv: GenericEnvClient)"
        )
        run_server(
            env_id,
            host=host,
            port=port,
            max_sessions=max_sessions,
            idle_timeout_s=idle_timeout or None,
            token=token,
            max_request_bytes=max_request_bytes,
            admission=admission,
            send_gold=send_gold,
            limits=limits,
            **kwargs,
        )
