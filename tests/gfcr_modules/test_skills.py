"""The skill library: extraction, persistence, BM25 retrieval, use as guidance and as tools,
and transfer between tasks of the shop family."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gfcr.agents import Request
from gfcr.core import Message, Step, ToolCall, Trajectory
from gfcr.core.policy import Completion
from gfcr.errors import ConfigError, ToolError
from gfcr.generate import Guide, GuidedPolicy
from gfcr.skills import Skill, SkillLibrary, extract_functions, extract_tool_sequence, skill_tool
from gfcr.workloads import KINDS, ShopTools


def learn(library: SkillLibrary, family: ShopTools, tasks, attempts: int = 10) -> None:
    for task in tasks:
        for _ in range(attempts):
            trajectory = family.episode(task)
            if trajectory.total_reward == 1.0:
                library.extract(trajectory)
                break


def test_skills_persist_with_provenance_and_statistics(tmp_path: Path):
    family = ShopTools(seed=0)
    task = family.tasks(1)[0]
    trajectory = family.episode(task, KINDS[task.metadata["kind"]][1])
    trajectory.provenance.policy_version = "12"
    library = SkillLibrary(tmp_path / "skills.db")
    (skill,) = library.extract(trajectory)
    assert skill.source_trajectory == trajectory.id and skill.policy_version == "12"
    assert library.extract(family.episode(task, ("price",))) == []  # a failure teaches nothing
    library.record(skill.id, True)
    library.record(skill.id, False)
    library.close()
    reopened = SkillLibrary(tmp_path / "skills.db")
    back = reopened.get(skill.id)
    assert (back.uses, back.successes, back.body, back.example) == (2, 1, skill.body, skill.example)
    assert back.success_rate == pytest.approx(2 / 4)
    assert isinstance(reopened, Guide) and "Skills that solved similar tasks" in reopened.guidance(
        task.prompt
    )
    reopened.remove(skill.id)
    assert len(SkillLibrary(tmp_path / "skills.db")) == 0


def test_procedures_learnt_on_some_tasks_solve_new_tasks_of_their_kind():
    family = ShopTools(seed=1)
    train, test = family.tasks(24, prefix="train"), family.tasks(80, prefix="test")
    library = SkillLibrary("sqlite://")
    learn(library, family, train)
    assert {s.name for s in library} >= {"price+convert", "price+tax", "price+discount"}
    guessed = np.mean([family.episode(t).total_reward for t in test])
    solved = []
    for task in test:
        (skill,) = library.retrieve(task.prompt, 1)
        tool = skill_tool(skill, family.tools)
        answer = tool(**{p: task.metadata["params"][p] for p in skill.parameters})
        solved.append(abs(answer - task.gold) < 1e-9)
    assert guessed < 0.25 and np.mean(solved) >= 0.9


def test_retrieved_skills_reach_the_policy_as_guidance():
    family = ShopTools(seed=3)
    library = SkillLibrary("sqlite://")
    learn(library, family, family.tasks(12, prefix="train"))
    seen = []

    class Spy:
        name, version = "test:spy", "1"

        def generate(self, requests):
            seen.extend(requests)
            return [Completion("ok") for _ in requests]

    task = family.tasks(1, prefix="new")[0]
    GuidedPolicy(Spy(), library).generate([Request((Message("user", task.prompt),))])
    system = seen[0].messages[0]
    (best,) = library.retrieve(task.prompt, 1)
    assert system.role == "system" and f"Procedure `{best.name}`" in system.content
    assert best.name == "+".join(KINDS[task.metadata["kind"]][1])  # the procedure of the task's kind


def test_a_library_loaded_from_its_state_dict_retrieves_the_same_skills(tmp_path: Path, through_checkpoint):
    family = ShopTools(seed=4)
    original = SkillLibrary("sqlite://")
    learn(original, family, family.tasks(16, prefix="train"))
    first = next(iter(original))
    original.record(first.id, True)
    loaded = SkillLibrary(tmp_path / "skills.db")
    learn(loaded, ShopTools(seed=5), ShopTools(seed=5).tasks(2, prefix="other"))  # replaced by the state
    loaded.load_state_dict(through_checkpoint(original.state_dict()))
    assert [s.id for s in loaded] == [s.id for s in original] and loaded.get(first.id).uses == 1
    for task in family.tasks(10, prefix="new"):
        assert [s.id for s in loaded.retrieve(task.prompt)] == [s.id for s in original.retrieve(task.prompt)]
        assert loaded.guidance(task.prompt) == original.guidance(task.prompt)
    loaded.close()
    reopened = SkillLibrary(tmp_path / "skills.db")  # the loaded state was written to its database
    assert {s.id for s in reopened} == {s.id for s in original} and reopened.get(first.id).uses == 1


def test_extraction_turns_repeated_results_into_references():
    t = Trajectory(
        "e",
        "t",
        "Pear in EUR?",
        messages=[
            Message(
                "assistant", "", (ToolCall("price", {"item": "pear"}), ToolCall("price", {"item": "fig"}))
            ),
            Message("tool", "0.8"),
            Message("tool", "0.9"),
            Message("assistant", "", (ToolCall("convert", {"amount": 0.9, "currency": "EUR"}),)),
        ],
    )
    skill = extract_tool_sequence(t)
    assert skill.steps[2]["arguments"]["amount"] == {"$result": 1}  # the fig's price, not the pear's
    assert skill.parameters == ["item", "currency"] and skill.description == "<item> in <currency>?"
    assert extract_tool_sequence(Trajectory("e", "t", "?")) is None


def test_helper_functions_run_as_sandboxed_tools():
    code = "Here:\n```python\nimport math\n\ndef hyp(a, b):\n    return math.hypot(a, b)\n\n"
    code += "def _private():\n    pass\n```"
    trajectory = Trajectory("e", "t", "Hypotenuse?", [Step(code, "", 1.0, True, False)])
    (skill,) = extract_functions(trajectory)
    assert skill.name == "hyp" and skill.parameters == ["a", "b"]
    tool = skill_tool(skill)
    assert tool(a=3, b=4) == 5.0
    chatty = "def total(xs):\n    print('adding', xs)\n    return sum(xs)\n"
    (helper,) = extract_functions(Trajectory("e", "t", "Sum?", [Step(chatty, "", 1.0, True, False)]))
    assert skill_tool(helper)(xs=[1, 2, 3]) == 6  # what the helper prints is not its result
    with pytest.raises(ToolError, match="hyp failed"):
        tool(a="x", b=4)
    assert extract_functions(Trajectory("e", "t", "?", [Step("def broken(:", "", 1.0, True, False)])) == []


def test_procedure_tools_need_their_env_tools():
    skill = Skill("a+b", "tool_sequence", "d", '[{"name": "a", "arguments": {}}]')
    with pytest.raises(ToolError, match=r"calls tools \['a'\]"):
        skill_tool(skill, {})
    with pytest.raises(ConfigError):
        Skill("x", "macro", "d", "")


def test_an_embedding_encoder_replaces_bm25():
    vocabulary = ["price", "convert", "tax", "coupon"]

    def encoder(texts):  # bag of field words: enough to test the plumbing
        return np.array([[text.lower().count(w) for w in vocabulary] + [0.01] for text in texts], dtype=float)

    family = ShopTools(seed=2)
    library = SkillLibrary("sqlite://", encoder=encoder)
    learn(library, family, family.tasks(12))
    (best,) = library.retrieve("what is the tax on it", 1)
    assert best.name == "price+tax"
