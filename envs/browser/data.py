"""Browser task sources by name: MiniWoB pages, gfcr's apps, or any mix of them.

>>> len(browser_source("apps")), len(browser_source("injection"))
(58, 24)
>>> len(browser_source("solvable", num_seeds=1)) == len(SOLVED_PAGES)
True
>>> browser_source("vision", num_seeds=1)[0].id
'miniwob/click-color/0'
>>> mixed = browser_source(["shop", "miniwob/click-test"], num_seeds=5)
>>> len(mixed), mixed[4].id, mixed[5].id
(25, 'miniwob/click-test/4', 'shop/0')
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from gfcr.envs.browser.apps import APPS
from gfcr.envs.browser.miniwob import miniwob_pages, miniwob_source
from gfcr.envs.browser.miniwob_oracle import SCREENSHOT_PAGES, SOLVED_PAGES
from gfcr.envs.tasks import TaskSource
from gfcr.errors import UnknownNameError

GROUPS = ("all", "miniwob", "solvable", "vision", "apps", "injection")


def browser_source(dataset: str | Sequence[str] = "all", num_seeds: int = 100) -> TaskSource:
    """Tasks named by `dataset`: "all", "miniwob", "solvable" (the MiniWoB pages that the scripted
    oracle solves from the page text, `SOLVED_PAGES`), "vision" (the pages whose task is drawn,
    which it solves where the env shows the screenshot, `SCREENSHOT_PAGES`), "apps", an app
    ("shop", "booking", "mail"), "injection" (the apps' prompt-injection tasks, in neither "all"
    nor "apps"), a MiniWoB page ("click-test" or "miniwob/click-test"), or a list of these.

    MiniWoB pages give `num_seeds` tasks each (`miniwob/<page>/<seed>`); apps their own tasks.
    """
    names = [dataset] if isinstance(dataset, str) else list(dataset)
    sources: list[TaskSource] = []
    pages: list[str] = []
    for name in names:
        if name in ("all", "miniwob"):
            pages.extend(miniwob_pages())
        if name == "solvable":
            pages.extend(SOLVED_PAGES)
        if name == "vision":
            pages.extend(SCREENSHOT_PAGES)
        if name in ("all", "apps"):
            sources.extend(app_source(app) for app in APPS)
        if name == "injection":
            sources.extend(injection_source(app) for app in APPS if APPS[app].num_injection_tasks)
        if name in GROUPS:
            continue
        if name in APPS:
            sources.append(app_source(name))
        elif name.removeprefix("miniwob/") in miniwob_pages():
            pages.append(name.removeprefix("miniwob/"))
        else:
            raise UnknownNameError("browser dataset", name, [*GROUPS, *APPS, *miniwob_pages()])
    if pages:
        sources.insert(0, miniwob_source(list(dict.fromkeys(pages)), num_seeds))
    return sources[0] if len(sources) == 1 else TaskSource.concat("+".join(names), sources)


def app_source(name: str) -> TaskSource:
    """Every task of the app `name`: `<name>/0` … `<name>/<num_tasks - 1>`."""
    app = APPS[name]

    index_of = functools.partial(_app_index, name, app.num_tasks)  # not a closure: envs must pickle
    return TaskSource(name, app.num_tasks, app.task, index_of)


def injection_source(name: str) -> TaskSource:
    """The app `name`'s prompt-injection tasks: `<name>/injection/0` … (`App.injection_task`)."""
    app = APPS[name]
    prefix = f"{name}/injection"
    index_of = functools.partial(_app_index, prefix, app.num_injection_tasks)
    return TaskSource(prefix, app.num_injection_tasks, app.injection_task, index_of)


def _app_index(prefix: str, num_tasks: int, task_id: str) -> int | None:
    head, _, number = task_id.rpartition("/")
    return int(number) if head == prefix and number.isdigit() and int(number) < num_tasks else None
