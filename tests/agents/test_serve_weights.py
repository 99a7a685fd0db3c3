"""Weight pushes to `gfcr serve` while it serves (`POST /v1/weights`), and the version each
completion reports: a real server over the tiny model, a trainer-side copy of the model that the
pushed weights come from, and the served completions checked against that copy's own."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
from servers import gfcr_process, serve_in_thread

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("openai", reason="the openai extra is not installed")
peft = pytest.importorskip("peft", reason="the train extra is not installed")
torch = pytest.importorskip("torch", reason="the hf extra is not installed")

from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from gfcr.agents.policies.hf import HFPolicy  # noqa: E402
from gfcr.agents.policies.openai_api import OpenAIPolicy  # noqa: E402
from gfcr.agents.policies.weights import push_weights, save_weights  # noqa: E402
from gfcr.apps.serve import create_app  # noqa: E402
from gfcr.core import Message  # noqa: E402
from gfcr.core.policy import Request, SamplingParams  # noqa: E402
from gfcr.errors import ConfigError, PolicyError  # noqa: E402

QUESTION = Request((Message("user", "What is 2+2?"),), (), SamplingParams(0.0, 1.0, 12, 2, (), seed=3))


def ask(url: str) -> dict:
    """The raw chat completion for QUESTION (greedy, two samples, token ids and logprobs)."""
    body = {"model": "tiny", "messages": [{"role": "user", "content": "What is 2+2?"}], "temperature": 0,
            "max_tokens": 12, "n": 2, "seed": 3, "logprobs": True, "return_token_ids": True}  # fmt: skip
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def answers(url: str) -> list[tuple[tuple[int, ...], str | None]]:
    """What `openai:` makes of QUESTION: each completion's token ids and weights' version."""
    policy = OpenAIPolicy("tiny", f"{url}/v1", max_retries=0)
    try:
        return [(c.completion_ids or (), c.policy_version) for c in policy.generate([QUESTION])]
    finally:
        policy.close()


def local_ids(model, tiny_model: Path) -> list[tuple[int, ...]]:
    """QUESTION's completions from `model` in this process (the reference for what a server with
    its weights must answer)."""
    policy = HFPolicy.from_model(model.eval(), AutoTokenizer.from_pretrained(tiny_model))
    return [c.completion_ids or () for c in policy.generate([QUESTION])]


def perturbed(model, seed: int, scale: float = 0.5):
    """`model` with seeded noise added to each trainable parameter."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.requires_grad:
                parameter.add_(scale * torch.randn(parameter.shape, generator=generator))
    return model


def with_lora(tiny_model: Path, seed: int, r: int = 4):
    """A trainer's LoRA model over the tiny model, its adapter trained (here: perturbed, B too)."""
    config = peft.LoraConfig(r=r, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.1,
                             task_type="CAUSAL_LM")  # fmt: skip
    return perturbed(peft.get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model), config), seed)


@pytest.fixture
def server(tiny_model):
    """`gfcr serve` over a fresh tiny model (pushes change it), weight updates allowed: (URL, policy)."""
    policy = HFPolicy(tiny_model)
    with serve_in_thread(create_app(policy, "tiny", allow_weight_updates=True)) as url:
        yield url, policy


def test_pushed_weights_serve_at_once_and_each_completion_names_them(server, tiny_model, tmp_path):
    url, policy = server
    first = policy.version
    before = ask(url)
    assert before["gfcr_policy_version"] == before["system_fingerprint"] == first
    assert [c["gfcr_policy_version"] for c in before["choices"]] == [first, first]
    assert [v for _, v in answers(url)] == [first, first]

    trained = perturbed(AutoModelForCausalLM.from_pretrained(tiny_model), seed=1)
    trained.model.embed_tokens.requires_grad_(False)  # frozen: not saved, not pushed
    file = save_weights(trained, tmp_path / "step-1")
    assert file.name == "model.safetensors"
    answer = push_weights(url, file, "step-1")
    assert answer == {
        "object": "weights",
        "version": "step-1",
        "tensors": len(list(trained.parameters())) - 1,
    }

    after = ask(url)
    assert after["gfcr_policy_version"] == after["system_fingerprint"] == "step-1"
    assert httpx.get(f"{url}/v1/weights").json()["version"] == "step-1"
    assert [v for _, v in answers(url)] == ["step-1", "step-1"]
    assert [c["token_ids"] for c in after["choices"]] != [c["token_ids"] for c in before["choices"]]
    # what the server answers is what the pushed weights generate (the frozen embeddings stayed)
    trained.model.embed_tokens.weight.copy_(policy.model.model.embed_tokens.weight)
    assert [ids for ids, _ in answers(url)] == local_ids(trained, tiny_model)


def test_a_lora_adapter_serves_and_later_adapters_of_its_configuration_replace_it(
    server, tiny_model, tmp_path
):
    url, policy = server
    base = [ids for ids, _ in answers(url)]
    for step, seed in (("lora-1", 1), ("lora-2", 2)):
        trained = with_lora(tiny_model, seed)
        folder = save_weights(trained, tmp_path / step)
        assert (folder / "adapter_config.json").is_file() and (folder / "adapter_model.safetensors").is_file()
        lora_tensors = sum("lora_" in n for n, _ in trained.named_parameters())
        assert push_weights(url, folder, step) == {
            "object": "weights",
            "version": step,
            "tensors": lora_tensors,
        }
        served = answers(url)
        assert [v for _, v in served] == [step, step]
        assert [ids for ids, _ in served] == local_ids(trained, tiny_model) != base

    other_rank = save_weights(with_lora(tiny_model, 3, r=8), tmp_path / "rank-8")
    with pytest.raises(PolicyError, match=r"configured unlike .*r: 4 served, 8 pushed"):
        push_weights(url, other_rank, "rank-8")
    whole = save_weights(perturbed(AutoModelForCausalLM.from_pretrained(tiny_model), 4), tmp_path / "whole")
    with pytest.raises(PolicyError, match="takes adapters only"):
        push_weights(url, whole, "whole")
    assert [ids for ids, _ in answers(url)] == local_ids(trained, tiny_model)
    assert httpx.get(f"{url}/v1/weights").json()["version"] == "lora-2"


def bad_pushes(tiny_model: Path, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Weights that must be refused: name -> (path, what the refusal says)."""
    from safetensors.torch import save_file

    unknown, shape, text = (
        tmp_path / "unknown.safetensors",
        tmp_path / "shape.safetensors",
        tmp_path / "w.txt",
    )
    save_file({"model.norm.weight": torch.ones(64), "model.not_a_layer.weight": torch.ones(2)}, unknown)
    save_file({"model.norm.weight": torch.ones(3)}, shape)
    text.write_text("not weights")
    adapter = save_weights(with_lora(tiny_model, 1), tmp_path / "adapter")
    misfits = {}
    for name, change, says in (("targets", {"target_modules": ["no_such_proj"]}, "does not fit the served model"),
                               ("rank", {"r": 8}, "other shapes")):  # fmt: skip
        folder = tmp_path / f"adapter-{name}"
        shutil.copytree(adapter, folder)
        config = json.loads((folder / "adapter_config.json").read_text())
        (folder / "adapter_config.json").write_text(json.dumps({**config, **change}))
        misfits[f"adapter, other {name}"] = (folder, says)
    return {
        "missing path": (tmp_path / "nowhere", "no weights at"),
        "unknown name": (unknown, "unknown parameters \\['model.not_a_layer.weight'\\]"),
        "wrong shape": (shape, "other shapes for \\['model.norm.weight'\\]"),
        "not safetensors": (text, "is not weights gfcr can load"),
        **misfits,
    }


def test_bad_pushes_are_refused_whole_and_the_server_keeps_its_weights(server, tiny_model, tmp_path):
    url, policy = server
    first, before = policy.version, answers(url)
    for name, (path, says) in bad_pushes(tiny_model, tmp_path).items():
        response = httpx.post(f"{url}/v1/weights", json={"path": str(path), "version": name}, timeout=60)
        assert response.status_code == 400, name
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and error["code"] == 400
        assert error["message"].startswith(f"weights not loaded, still serving {first!r}")
        assert re.search(says, error["message"]), (name, error)
        assert httpx.get(f"{url}/v1/weights").json()["version"] == first
        assert answers(url) == before, name
    assert type(policy.model).__name__ == "Qwen2ForCausalLM"  # the misfit adapters were taken off again
    assert httpx.post(f"{url}/v1/weights", json={"path": "", "version": "x"}).status_code == 400


def test_weight_updates_are_refused_unless_the_server_allows_them(tiny_model, tmp_path):
    policy = HFPolicy(tiny_model)
    file = save_weights(perturbed(AutoModelForCausalLM.from_pretrained(tiny_model), 1), tmp_path)
    with serve_in_thread(create_app(policy, "tiny")) as url:
        response = httpx.post(f"{url}/v1/weights", json={"path": str(file), "version": "step-1"})
        assert response.status_code == 403 and "--allow-weight-updates" in response.json()["error"]["message"]
        with pytest.raises(PolicyError, match="403.*--allow-weight-updates"):
            push_weights(f"{url}/v1", file, "step-1")
        assert httpx.get(f"{url}/v1/weights").json()["version"] == policy.version != "step-1"


def test_the_cli_flag_opens_weight_updates(tiny_model, tmp_path):
    file = save_weights(perturbed(AutoModelForCausalLM.from_pretrained(tiny_model), 1), tmp_path)
    with gfcr_process("serve", str(tiny_model), "--name", "tiny", "--allow-weight-updates") as (url, _):
        assert push_weights(url, file, "step-1")["version"] == "step-1"
        assert [v for _, v in answers(url)] == ["step-1", "step-1"]


def test_a_model_with_nothing_to_train_has_nothing_to_save(tmp_path):
    frozen = torch.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(ConfigError, match="Linear has no parameter that requires grad"):
        save_weights(frozen, tmp_path / "step-1")
    assert not (tmp_path / "step-1").exists()
