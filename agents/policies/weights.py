"""New weights for a policy that is serving: a trainer writes them (`save_weights`) and tells a
`gfcr serve --allow-weight-updates` server to load them (`push_weights`); the server loads them
into its `HFPolicy` (`load_weights_from`) and names each completion's weights after the push.

What travels is a path on a disk both sides see, in one of two forms:

- a PEFT LoRA adapter folder (`adapter_config.json` + `adapter_model.safetensors`, as
  `peft_model.save_pretrained` writes it). The first such push wraps the served model with peft
  once (a new LoRA's B is zero, so the wrapped model computes what the base did until the pushed
  tensors are in); every push then copies its adapter's tensors in. An adapter of another
  configuration (rank, alpha, targets) is refused: restart the server to serve it. The adapter
  must have been trained on the served base weights (PiSSA-style initialisations, which change
  the base, do not fit: serve their merged model instead).
- a `.safetensors` file, or a folder holding `model.safetensors`, of some or all of the model's
  parameters by name (`model.named_parameters()`: a full state dict, or the trained ones alone).

Every copy goes through `HFPolicy.load_weights`: names and shapes are checked before anything is
copied, and a batch being generated finishes with the weights it began with.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gfcr.errors import ConfigError, MissingExtraError, PolicyError

if TYPE_CHECKING:
    import torch

    from gfcr.agents.policies.hf import HFPolicy

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
MODEL_WEIGHTS = "model.safetensors"
# Adapter settings that do not change what the adapter computes (where it was saved from, with
# which peft, how it was initialised before training): two adapters differing only here fit alike.
_IRRELEVANT_SETTINGS = frozenset(
    {
        "base_model_name_or_path",
        "revision",
        "peft_version",
        "inference_mode",
        "init_lora_weights",
        "auto_mapping",
    }
)


def save_weights(model: torch.nn.Module, directory: str | Path) -> Path:
    """Write what a server needs to take `model`'s trained weights, into `directory`; the path to push.

    A peft model writes its adapter (the folder is returned); any other model writes its
    parameters that require grad to `directory/model.safetensors` (that file is returned).

    >>> import tempfile, torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    >>> _ = model[0].requires_grad_(False)  # frozen: the server has it already
    >>> path = save_weights(model, tempfile.mkdtemp())
    >>> from safetensors.torch import load_file
    >>> path.name, sorted(load_file(path))
    ('model.safetensors', ['1.bias', '1.weight'])
    """
    directory = Path(directory)
    if _is_peft(model):
        # The base embeddings are frozen under LoRA and the server has them; "auto" would also
        # look the base model up on the Hub.
        model.save_pretrained(directory, save_embedding_layers=False)  # type: ignore[operator]
        return directory
    from safetensors.torch import save_file

    trained = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}
    if not trained:
        raise ConfigError(
            f"{type(model).__name__} has no parameter that requires grad, so there is nothing to push; "
            "push after unfreezing what you train (or save a peft model's adapter)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    file = directory / MODEL_WEIGHTS
    save_file(trained, str(file))
    return file


def push_weights(
    base_url: str, path: str | Path, version: str, *, timeout_s: float = 600.0
) -> dict[str, Any]:
    """Tell the `gfcr serve` at `base_url` to load the weights at `path` as `version`; its answer
    (`{"object": "weights", "version": ..., "tensors": N}`) once they serve.

    `base_url` is the server's address, with or without `/v1` (the `openai:` spec's URL works);
    `path` must be readable on the server's machine (it is sent made absolute). A refusal (the
    server started without `--allow-weight-updates`, weights that do not fit) raises `PolicyError`
    with the server's message, and the server keeps serving its previous weights; a server that
    cannot be reached raises a retryable one.

    >>> push_weights("http://127.0.0.1:9", "/tmp/step-3", "3", timeout_s=1)  # nothing listens there
    Traceback (most recent call last):
    ...
    gfcr.errors.PolicyError: cannot push weights to http://127.0.0.1:9/v1/weights: ConnectError: ...
    """
    import httpx

    root = base_url.rstrip("/")
    url = (root if root.endswith("/v1") else f"{root}/v1") + "/weights"
    body = {"path": str(Path(path).resolve()), "version": version}
    try:
        response = httpx.post(url, json=body, timeout=timeout_s)
    except httpx.HTTPError as e:
        raise PolicyError(f"cannot push weights to {url}: {type(e).__name__}: {e}", retryable=True) from e
    if response.status_code != 200:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:500]
        raise PolicyError(
            f"{url} refused weights {version!r} ({response.status_code}): {message}",
            retryable=response.status_code >= 500,
        )
    answer: dict[str, Any] = response.json()
    return answer


def load_weights_from(policy: HFPolicy, path: str | Path, version: str) -> int:
    """Load the weights at `path` (a LoRA adapter folder, a `.safetensors` file or a folder
    holding `model.safetensors`) into `policy` as `version`; how many tensors were loaded.

    Weights that do not fit raise `PolicyError` with nothing loaded: `policy` keeps its weights
    and its version.

    >>> import tempfile, torch
    >>> from safetensors.torch import save_file
    >>> from gfcr.agents.policies.hf import HFPolicy
    >>> from gfcr.agents.policies.tiny_model import write_tiny_model
    >>> policy = HFPolicy(write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20))
    >>> file = f"{tempfile.mkdtemp()}/step-1.safetensors"
    >>> save_file({"model.norm.weight": torch.ones(policy.model.config.hidden_size)}, file)
    >>> load_weights_from(policy, file, "step-1"), policy.version
    (1, 'step-1')
    """
    path = Path(path)
    if not path.exists():
        raise PolicyError(
            f"no weights at {str(path)!r}: push a path that exists on the server's machine "
            "(push_weights sends it made absolute)"
        )
    if (path / ADAPTER_CONFIG).is_file():
        return _load_adapter(policy, path, version)
    file = path / MODEL_WEIGHTS if path.is_dir() else path
    if file.suffix != ".safetensors" or not file.is_file():
        raise PolicyError(
            f"{str(path)!r} is not weights gfcr can load: push a PEFT adapter folder ({ADAPTER_CONFIG} + "
            f"{ADAPTER_WEIGHTS}), a .safetensors file, or a folder holding {MODEL_WEIGHTS}"
        )
    if _is_peft(policy.model):
        raise PolicyError(
            f"{policy.name} serves a LoRA adapter pushed earlier, so it takes adapters only; push the "
            "adapter folder, or restart the server to push whole weights"
        )
    tensors = _read_safetensors(file)
    policy.load_weights(tensors, version)
    return len(tensors)


def _load_adapter(policy: HFPolicy, folder: Path, version: str) -> int:
    """Load the LoRA adapter in `folder`, wrapping the served model with peft at the first one."""
    config = _adapter_config(folder)
    tensors = _read_safetensors(folder / ADAPTER_WEIGHTS)
    wrapped_now = not _is_peft(policy.model)
    if wrapped_now:
        _wrap(policy, config, folder)
    else:
        _check_same_adapter(policy.model.peft_config["default"], config, folder)
    try:
        names = _adapter_parameter_names(policy.model)
        unknown = sorted(set(tensors) - set(names))
        if unknown:
            raise PolicyError(
                f"the adapter at {str(folder)!r} holds tensors the served model has no place for, such as "
                f"{unknown[:3]}: it was made for another model or peft method; push an adapter trained "
                "on the served model"
            )
        policy.load_weights({names[key]: tensor for key, tensor in tensors.items()}, version)
    except Exception:
        if wrapped_now:  # back to the plain model, as before the push
            with policy.weights_lock:
                policy.model = policy.model.unload()  # type: ignore[operator]  # PeftModel.unload
        raise
    return len(tensors)


def _adapter_config(folder: Path) -> Any:
    """The LoRA config saved in `folder` (other peft methods are refused)."""
    try:
        from peft import LoraConfig, PeftConfig
    except ImportError as e:
        raise MissingExtraError("a LoRA adapter push", "peft", "train") from e

    try:
        config = PeftConfig.from_pretrained(str(folder))
    except (OSError, ValueError, TypeError) as e:
        raise PolicyError(f"cannot read the adapter config {str(folder / ADAPTER_CONFIG)!r}: {e}") from e
    if not isinstance(config, LoraConfig):
        raise PolicyError(
            f"the adapter at {str(folder)!r} is {config.peft_type}; gfcr serve takes LoRA adapters only "
            "(or push the merged weights as a .safetensors file)"
        )
    return config


def _wrap(policy: HFPolicy, config: Any, folder: Path) -> None:
    """Give the served model a LoRA adapter of `config` that changes nothing yet (B = 0)."""
    from peft import get_peft_model

    config.init_lora_weights = True  # B = 0 until the pushed tensors are copied in
    with policy.weights_lock:
        training = policy.model.training
        try:
            wrapped = get_peft_model(policy.model, config)
        except (ValueError, TypeError) as e:
            raise PolicyError(f"the adapter at {str(folder)!r} does not fit the served model: {e}") from e
        policy.model = wrapped.train(training)  # new LoRA modules start in training mode (dropout)


def _check_same_adapter(served: Any, pushed: Any, folder: Path) -> None:
    """Refuse an adapter whose configuration differs from the one the server was given first."""
    old, new = served.to_dict(), pushed.to_dict()
    differ = sorted(
        k for k in old.keys() | new.keys() if k not in _IRRELEVANT_SETTINGS and old.get(k) != new.get(k)
    )
    if differ:
        shown = "; ".join(f"{k}: {old.get(k)!r} served, {new.get(k)!r} pushed" for k in differ[:4])
        raise PolicyError(
            f"the adapter at {str(folder)!r} is configured unlike the one this server took first ({shown}); "
            "push adapters of one configuration, or restart the server to serve another"
        )


def _adapter_parameter_names(model: Any) -> dict[str, str]:
    """Each key peft saves an adapter's tensor under -> the model's parameter that holds it.

    peft renames keys on saving, differently per method (the adapter's name dropped, DoRA's
    magnitudes, `modules_to_save`): rather than undo that here, ask peft for the state dict it
    would save and match its tensors to parameters by storage (they are views of them).
    """
    from peft import get_peft_model_state_dict

    by_storage = {parameter.data_ptr(): name for name, parameter in model.named_parameters()}
    saved = get_peft_model_state_dict(model, save_embedding_layers=True)
    return {key: by_storage[t.data_ptr()] for key, t in saved.items() if t.data_ptr() in by_storage}


def _read_safetensors(file: Path) -> Mapping[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(file))
    except (SafetensorError, OSError) as e:
        raise PolicyError(f"cannot read {str(file)!r} as safetensors: {e}") from e


def _is_peft(model: Any) -> bool:
    try:
        from peft import PeftModel
    except ImportError:  # no peft, no peft model
        return False
    return isinstance(model, PeftModel)
