"""[rollout] backend = "served": a `gfcr serve --allow-weight-updates` generates, the trainer trains
its own copy and pushes each step's weights; the server names the weights of every completion."""

from __future__ import annotations

import httpx
import pytest
from servers import serve_in_thread

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("openai", reason="the openai extra is not installed")

from gfcr.agents.policies.hf import HFPolicy  # noqa: E402
from gfcr.apps.serve import create_app  # noqa: E402
from gfcr.errors import ConfigError  # noqa: E402
from gfcr.trainers import Trainer  # noqa: E402


@pytest.mark.parametrize(("staleness", "lora"), [(0, 0), (1, 4)])
def test_a_served_policy_gets_every_steps_weights(make_config, tiny_model, staleness, lora):
    """After each update the server loads the trained weights (an adapter with LoRA) as the next
    version, its completions name the weights that made them, and the trained tokens carry them:
    no trained token is older than max_staleness."""
    server = HFPolicy(tiny_model)
    with serve_in_thread(create_app(server, "tiny", allow_weight_updates=True)) as url:
        trainer = Trainer(
            make_config(
                steps=3,
                rollout={"backend": "served", "server_url": url},
                model={"lora_rank": lora},
                **{"async": {"max_staleness": staleness}},
            )
        )
        history = trainer.train()
        assert httpx.get(f"{url}/v1/weights").json()["version"] == "3"
    trained = {n: p.detach() for n, p in trainer.model.named_parameters() if p.requires_grad}
    served = dict(server.model.named_parameters())
    assert all(served[n].equal(w) for n, w in trained.items())  # the server holds the last step's weights
    assert all(h["async/staleness_max"] <= staleness for h in history)
    for tokens in (t.tokens for t in trainer.last_rollout.trained):  # step 3's, at version 2 or later
        assert tokens.versions is not None
        assert min(v for v, m in zip(tokens.versions, tokens.loss_mask, strict=True) if m) >= 2 - staleness
    assert [p.name for p in (trainer.out / "weights").iterdir()] == ["step-000003"]  # older pushes removed


def test_a_server_of_other_weights_is_refused(make_config, tmp_path):
    """The served model must be the one trained: a server of another model is refused at start."""
    from gfcr.agents.policies.tiny_model import write_tiny_model

    other = HFPolicy(write_tiny_model(tmp_path / "other", vocab_size=400, corpus_tasks=5))
    with serve_in_thread(create_app(other, "other", allow_weight_updates=True)) as url:
        with pytest.raises(ConfigError, match="serve the model the trainer trains"):
            Trainer(make_config(rollout={"backend": "served", "server_url": url}))
    with pytest.raises(ConfigError, match="no gfcr serve answers there"):
        Trainer(make_config(rollout={"backend": "served", "server_url": "http://127.0.0.1:9"}))
