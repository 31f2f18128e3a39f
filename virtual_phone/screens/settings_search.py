"""Settings search: the rows and screens whose titles match what was typed, each shown as a result row that
opens the screen holding it, with its path ("Network & internet > Internet") as the summary.
"""

from __future__ import annotations

from virtual_phone.schema.app_schema import App, Row
from virtual_phone.screens.settings_rows import visible_rows
from virtual_phone.state.phone_state import PhoneState

MAX_RESULTS = 20


def paths(app: App) -> dict[str, list[str]]:
    """For each screen, the titles of the screens one taps through from the launch screen to reach it."""
    found: dict[str, list[str]] = {app.launch_screen: []}
    queue = [app.launch_screen]
    while queue:
        sid = queue.pop(0)
        for row in app.screens[sid].rows:
            if row.opens is not None and row.opens not in found:
                found[row.opens] = [*found[sid], app.screens[row.opens].title]
                queue.append(row.opens)
    return found


def search_rows(app: App, state: PhoneState, query: str) -> list[tuple[int, Row]]:
    """Result rows for `query` (case-insensitive substring of a title); none for an empty query."""
    q = query.strip().lower()
    if not q:
        return []
    where = paths(app)
    results: list[Row] = []
    seen: set[tuple[str, str]] = set()

    def add(title: str, target: str, path: list[str]) -> None:
        summary = " > ".join(path) or app.label
        if (title, summary) not in seen and len(results) < MAX_RESULTS:
            seen.add((title, summary))
            results.append(Row(title=title, kind="link", opens=target, summary=summary))

    for sid, path in where.items():
        screen = app.screens[sid]
        if sid != app.launch_screen and q in screen.title.lower():
            add(screen.title, sid, path[:-1])
        for _, row in visible_rows(screen, state):
            if row.kind != "header" and q in row.title.lower():
                add(row.title, sid, path)
    return list(enumerate(results))
