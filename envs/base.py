"""The text-env contract: `TextEnv`, a `gymnasium.Env[str, str]` for LLM rollouts.

A subclass supplies its tasks and tools and implements `respond(action) -> Outcome`, plus the
hooks of the episode's lifecycle it needs (below); the base class does everything the contract
requires of every env: task choice by seed or `options={"task_id": ...}` (or a `Task` object the
env's tasks do not hold, `options={"task": task}`: a generated task, graded from its own gold),
skills the episode may call as tools (`options={"skills": [record, ...]}`: skill records, built
into tools here by `gfcr.skills.skill_tools`; a procedure runs the env's own tools, a function in
the sandbox), tool-call parsing, tool dispatch, turn and length limits, each step's budget for
tool calls (`max_tool_calls`, `step_time_s`: see `gfcr.envs.budget`), clear error observations
for malformed actions (never an exception), and the `info` keys (`task`, `messages`, `tools` on
reset; `messages`, `signals` on step, and `state` where the env records its final state for an
offline verifier).

Rewards: whatever `respond` returns; 0.0 for any action the env cannot use (wrong type, too long,
malformed tool call, a step after the end) — such steps set `format_ok` to False. A step whose
tool calls go past the step's budget truncates the episode with the reward `respond` gave
(0.0 unless the env says otherwise).

One episode's lifecycle, and the hooks it calls (each a no-op by default):

    reset(): end_episode() of the episode still open, if any; begin_episode(task) opens the
             episode's own resources (a sandbox session, a database, a simulated user, a page);
             render_prompt(task); prompt_images(task); system_prompt_for(task); extra_info()
    step():  respond(action); episode_signals(); extra_info(); end_episode() if the step ended it
    close(): end_episode() of the episode still open, if any

`end_episode` runs exactly once per begun episode, and also after a `begin_episode` that failed
halfway (so it releases only what exists); a failed `reset` leaves the env ready for the next one.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import gymnasium as gym

from gfcr.core import Action, Image, Message, Task, ToolCall, ToolSpec, parse_action
from gfcr.core.admission import reports_waits
from gfcr.core.tools import tool_deadline
from gfcr.core.trajectory import Signals
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S, StepBudget
from gfcr.envs.spaces import UnicodeText, observation_for
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError, EpisodeError, GfcrError, ToolError
from gfcr.filter.process import ProcessScorer

DEFAULT_MAX_ACTION_CHARS = 32_768  # a long chain of thought and a program fit; a runaway loop does not
DEFAULT_MAX_OBSERVATION_CHARS = 65_536  # what a tool result or a page may put in the context at once


@dataclass(frozen=True)
class Outcome:
    """What an env makes of one action: the observation text and the verdict on it.

    `messages` is the observation as chat messages; by default one user message. `truncated`
    ends the episode without a verdict (a limit was hit); the turn limit is applied by the base.
    `state`: what the env records of its final state when the episode ends (a JSON-able dict,
    put in `info["state"]` and kept in the trajectory's last `Step`), for an offline verifier.
    `images`: what the default user message shows after the text (an env with `messages` puts its
    images in them); the observation of a `text_and_image` space holds the last one's pixels.
    """

    observation: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    signals: Signals = field(default_factory=dict)
    messages: tuple[Message, ...] | None = None
    state: dict[str, Any] | None = None
    images: tuple[Image, ...] = ()


class TextEnv(gym.Env[str, str]):
    """Base of every gfcr env: text observations, text actions, tasks, tools and limits.

    Subclasses set `signal_defaults` (every signal key with its value for an unusable action)
    and implement `respond`; they may override `render_prompt`, `oracle` and the lifecycle hooks
    (`begin_episode`, `end_episode`, `system_prompt_for`, `episode_signals`, `extra_info`). Every subclass
    takes `max_tool_calls` and `step_time_s` and passes them here: the budget of each step's
    tool calls, enforced by `run_tools` (see `gfcr.envs.budget`).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # gymnasium.Env declares it per instance
    signal_defaults: ClassVar[Signals] = {"format_ok": False}
    # The family's rule-based process scorer, where the env can tell a step's progress from its
    # signals (`[judge.process] scorer = "rules"`; see gfcr.filter.process); None: it cannot.
    process_rules: ClassVar[ProcessScorer | None] = None

    def __init__(
        self,
        tasks: TaskSource,
        *,
        tools: Sequence[ToolSpec] = (),
        system_prompt: str | None = None,
        max_turns: int = 1,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
    ) -> None:
        if len(tasks) == 0:
            raise ConfigError(f"task source {tasks.name!r} is empty; pick a dataset or split that has tasks")
        if max_turns < 1:
            raise ConfigError(f"max_turns must be >= 1, got {max_turns}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.tasks = tasks
        self.tools = {tool.name: tool for tool in tools}
        self.skill_tools: dict[str, ToolSpec] = {}  # this episode's skills, as tools (reset's "skills")
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.max_action_chars = max_action_chars
        self.max_observation_chars = max_observation_chars
        self.budget = StepBudget(max_tool_calls, step_time_s)
        self.render_mode = render_mode
        self.observation_space = UnicodeText(max_observation_chars)
        self.action_space = UnicodeText(max_action_chars)
        self.task: Task | None = None
        self.messages: list[Message] = []
        self.turn = 0
        self.done = False
        self._episode_open = False  # begin_episode ran and end_episode has not yet
        # The last prompt's messages, reused while the system prompt and prompt stay the same
        # (messages are immutable): resetting to one task again builds no new objects.
        self._prompt_cache: tuple[str | None, tuple[str | Image, ...], tuple[Message, ...]] | None = None

    # -- what subclasses implement -------------------------------------------------------------

    @abstractmethod
    def respond(self, action: Action) -> Outcome:
        """React to a well-formed action of the current task (tool calls already parsed)."""

    def render_prompt(self, task: Task) -> str:
        """The prompt x the model sees for `task` (default: the task's own prompt)."""
        return task.prompt

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """The gold action for `task` after the conversation `messages` (built from gold data)."""
        raise GfcrError(f"{cls.__name__} has no oracle; implement {cls.__name__}.oracle(task, messages)")

    # -- the episode's lifecycle hooks (see the module docstring for when each is called) --------

    def begin_episode(self, task: Task) -> None:
        """Open what one episode of `task` needs of its own; `self.task` and `self.np_random` are set."""

    def end_episode(self) -> None:
        """Release what `begin_episode` opened; also called after a `begin_episode` that failed halfway."""

    def prompt_images(self, task: Task) -> Sequence[Image]:
        """Images the prompt shows after its text (default: none). An env that shows images makes
        its `observation_space` a `gfcr.envs.spaces.text_and_image` space (see `Outcome.images`)."""
        return ()

    def system_prompt_for(self, task: Task) -> str | None:
        """The system prompt of `task`'s episode (default: the `system_prompt` the env was made with)."""
        return self.system_prompt

    def episode_signals(self) -> Signals:
        """Signals of the episode so far, reported on every step whatever the action (default: none)."""
        return {}

    def extra_info(self) -> dict[str, Any]:
        """The env's own `info` keys after every reset and step (default: none); never the contract's."""
        return {}

    # -- the Gymnasium API -----------------------------------------------------------------------

    @reports_waits  # queues for shared resources (sandbox, LLM user) waited in the call: info["wait_s"]
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        if options and (unknown := set(options) - {"task_id", "task", "skills"}):
            raise ConfigError(
                f"unknown reset options {sorted(unknown)}; the options are 'task_id' (or 'task') and 'skills'"
            )
        if options and {"task_id", "task"} <= set(options):
            raise ConfigError("reset options 'task_id' and 'task' exclude each other; pass one")
        if options and "task" in options:
            if not isinstance(task := options["task"], Task):
                raise ConfigError(f"reset option 'task' must be a gfcr.core.Task, got {type(task).__name__}")
        elif options and "task_id" in options:
            task = self.tasks.get(options["task_id"])
        else:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self._end_episode()
        self.task, self.turn, self.done = task, 0, False
        self.skill_tools = {}
        try:
            self._episode_open = True
            self.begin_episode(task)
            if options and options.get("skills"):  # built on the episode's tools, once it has begun
                self.skill_tools = episode_skill_tools(options["skills"], self.tools)
            prompt = self._clip(self.render_prompt(task))
            images = tuple(self.prompt_images(task))
            self.messages = self._prompt_messages(self.system_prompt_for(task), prompt, images)
        except BaseException:
            self._end_episode()
            self.task = None  # no episode: step() asks for a reset
            raise
        info = {
            **self.extra_info(),
            "task": task,
            "messages": list(self.messages),
            "tools": [tool.to_openai() for tool in self.episode_tools.values()],
        }
        return observation_for(self.observation_space, prompt, images), info

    @reports_waits
    def step(self, action: str | Action) -> tuple[Any, float, bool, bool, dict]:
        if self.task is None:
            raise GfcrError("step() called before reset(); call env.reset() first")
        if self.done:
            outcome = Outcome("The episode is over; call reset() to start a new one.", terminated=True)
        else:
            self.turn += 1
            self.budget.start()
            parsed, problem = self._read(action)
            if parsed is not None:
                self.messages.append(Message("assistant", parsed.text, parsed.tool_calls))
            outcome = self._within_budget(problem or self.respond(parsed))  # type: ignore[arg-type]
        truncated = not outcome.terminated and (outcome.truncated or self.turn >= self.max_turns)
        self.done = self.done or outcome.terminated or truncated
        observation = self._clip(outcome.observation)
        if outcome.messages:
            messages = list(outcome.messages)
        else:
            content: str | list[str | Image] = (
                [observation, *outcome.images] if outcome.images else observation
            )
            messages = [Message("user", content)]
        self.messages.extend(messages)
        info = {
            **self.extra_info(),
            "messages": messages,
            "signals": {**self.signal_defaults, **outcome.signals, **self.episode_signals()},
            "turn": self.turn,
        }
        if outcome.state is not None:
            info["state"] = outcome.state
        if self.done:
            self._end_episode()
        obs = observation_for(self.observation_space, observation, [i for m in messages for i in m.images])
        return obs, float(outcome.reward), outcome.terminated, truncated, info

    def close(self) -> None:
        self._end_episode()
        super().close()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"[{m.role}] {m.text}" for m in self.messages)

    # -- shared machinery ------------------------------------------------------------------------

    @property
    def episode_tools(self) -> dict[str, ToolSpec]:
        """The tools this episode may call: the env's own, then its skills (which never replace one)."""
        return {**self.tools, **self.skill_tools} if self.skill_tools else self.tools

    def run_tools(self, action: Action) -> Outcome:
        """Run every tool call of `action` within the step's budget; results (or errors, or why a
        call was not run) become tool messages. Each call runs by the step's deadline, which tools
        read with `gfcr.core.tools.time_left`; an env may call this more than once in a step.
        A tool that returns an `Image`, or a list of text and `Image` parts, shows them in its
        message (`tool_content`); any other result is its text."""
        messages = []
        for call in action.tool_calls:
            result: str | tuple[str | Image, ...]
            if (refusal := self.budget.admit()) is not None:
                result = f"Error: not run: {refusal}."
            else:
                with tool_deadline(self.budget.deadline):
                    result = self._tool_result(call)
            content = (
                self._clip(result)
                if isinstance(result, str)
                else tuple(self._clip(part) if isinstance(part, str) else part for part in result)
            )
            messages.append(Message("tool", content, tool_call_id=call.id, name=call.name))
        self.budget.check_time()
        observation = "\n".join(m.text for m in messages)
        return Outcome(observation, signals={"format_ok": True}, messages=tuple(messages))

    def _tool_result(self, call: ToolCall) -> str | tuple[str | Image, ...]:
        """One tool call's result, or the error the agent should read."""
        try:
            tools = self.episode_tools
            tool = tools.get(call.name)
            if tool is None:
                raise ToolError(f"unknown tool {call.name!r}; available: {sorted(tools) or 'none'}")
            return tool_content(tool(**call.arguments))
        except ToolError as e:
            return f"Error: {e}"
        except EpisodeError:  # the infrastructure failed (e.g. a sandbox queue timeout): not the model's
            raise
        except Exception as e:  # a tool's own bug must not end the run: report it to the model
            return f"Error: {call.name} failed: {type(e).__name__}: {e}"

    def _within_budget(self, outcome: Outcome) -> Outcome:
        """`outcome`, truncated with a note saying why, if the step's tool calls went past its budget."""
        if self.budget.exceeded is None or outcome.terminated:
            return outcome
        note = self.budget.note()
        return replace(
            outcome,
            observation=f"{outcome.observation}\n{note}",
            truncated=True,
            messages=(*outcome.messages, Message("user", note)) if outcome.messages else None,
        )

    def _end_episode(self) -> None:
        """Run `end_episode` if an episode is open: once per episode, however it ends."""
        if self._episode_open:
            self._episode_open = False  # first: an end_episode that raises is not run again
            self.end_episode()

    def _prompt_messages(
        self, system_prompt: str | None, prompt: str, images: tuple[Image, ...] = ()
    ) -> list[Message]:
        """The episode's first messages: the system prompt (if any), then the prompt (and its
        images) as a user message."""
        cached = self._prompt_cache
        if cached is not None and cached[0] == system_prompt and cached[1] == (prompt, *images):
            return list(cached[2])
        messages = [Message("system", system_prompt)] if system_prompt else []
        messages.append(Message("user", [prompt, *images]) if images else Message("user", prompt))
        self._prompt_cache = (system_prompt, (prompt, *images), tuple(messages))
        return messages

    def _read(self, action: Any) -> tuple[Action | None, Outcome | None]:
        """The parsed action, and an error outcome if the env cannot use it."""
        if isinstance(action, Action):
            text = action.text
        elif isinstance(action, str):
            text = action
        else:
            return None, Outcome(f"Invalid action: expected text (str), got {type(action).__name__}.")
        if (size := action_chars(action)) > self.max_action_chars:
            message = f"Invalid action: {size} characters is over the limit of {self.max_action_chars}."
            return None, Outcome(message + " The episode is truncated.", truncated=True)
        if isinstance(action, Action):
            return action, None
        parsed, errors = parse_action(text)
        return parsed, Outcome("Invalid tool call: " + "; ".join(errors)) if errors else None

    def _clip(self, text: str) -> str:
        limit = self.max_observation_chars
        if len(text) <= limit:
            return text
        marker = f"\n…[truncated {len(text) - limit} characters]"
        return text[: limit - len(marker)] + marker


def episode_skill_tools(records: Sequence[dict[str, Any]], tools: dict[str, ToolSpec]) -> dict[str, ToolSpec]:
    """`gfcr.skills.skill_tools`, imported on first use: the skill library's modules (BM25,
    SQLAlchemy) cost half a second to import, which an env without skills should not pay."""
    from gfcr.skills.tools import skill_tools

    return skill_tools(records, tools)


def action_chars(action: str | Action) -> int:
    """An action's size in characters, however it is encoded: native tool calls count as their
    names and JSON arguments would as text, so a limit cannot be bypassed through them.

    >>> from gfcr.core import ToolCall
    >>> action_chars("hi"), action_chars(Action("hi", (ToolCall("f", {"x": "abc"}),)))
    (2, 15)
    """
    if isinstance(action, str):
        return len(action)
    calls = sum(len(c.name) + len(json.dumps(c.arguments, ensure_ascii=False)) for c in action.tool_calls)
    return len(action.text) + calls


def tool_content(result: Any) -> str | tuple[str | Image, ...]:
    """A tool's result as its message's content: an `Image`, or a list or tuple holding one, as
    parts (text parts as text); anything else as its text.

    >>> from PIL import Image as PILImage
    >>> dot = Image.from_pil(PILImage.new("RGB", (1, 1)))
    >>> tool_content(42), tool_content([1, 2]), tool_content(["zoomed", dot]) == ("zoomed", dot)
    ('42', '[1, 2]', True)
    """
    if isinstance(result, Image):
        return (result,)
    if isinstance(result, list | tuple) and any(isinstance(part, Image) for part in result):
        return tuple(part if isinstance(part, Image) else str(part) for part in result)
    return str(result)
