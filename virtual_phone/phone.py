"""One virtual phone: its state plus what a user can do to it (touch, keys, intents, settings, snapshots).

Thread-safe: shell commands run on worker threads; a lock guards the state, rendering happens outside it.
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from virtual_phone import app_modules
from virtual_phone.faults import FaultInjector
from virtual_phone.records import record_input
from virtual_phone.records.record_input import Editor
from virtual_phone.records.record_source import DataContext
from virtual_phone.records.screen_check import check_screens
from virtual_phone.schema.app_schema import Catalog, Row, load_catalog
from virtual_phone.screens.layout import layout
from virtual_phone.screens.settings_rows import switch_checked
from virtual_phone.screens.shade import TILES, panel_rect, toggle
from virtual_phone.shell.keys import KEY_CHARS, KEYCODES
from virtual_phone.shell.package_manager import system_packages
from virtual_phone.state.appdata import AppStore
from virtual_phone.state.log_buffer import BUFFERS, LogBuffer
from virtual_phone.state.owners import Users
from virtual_phone.state.phone_clock import DEFAULT_ZONE, PHONE_EPOCH_MS, Clock
from virtual_phone.state.phone_state import Dialog, Frame, PhoneState
from virtual_phone.state.storage import Storage
from virtual_phone.state.tree import BOOT_MTIME_NS, PhoneTree, TreeCopy
from virtual_phone.views.png import PngEncoder
from virtual_phone.views.render import render
from virtual_phone.views.uiautomator_xml import dump_xml

if TYPE_CHECKING:
    from virtual_phone.shell.userland import Userland
from virtual_phone.views.view_tree import (
    Layout,
    Metrics,
    Tap,
    View,
    contains,
    hit,
    long_hit,
)

LONG_PRESS_MS = 400  # ViewConfiguration's default long-press timeout
assert app_modules  # imported for its registrations: the apps' record sources and behaviours


@dataclass(frozen=True)
class Snapshot:
    name: str
    state: dict[str, object]
    created: float
    data: dict[str, bytes] = field(default_factory=dict)  # every app's database (AppStore.snapshot)
    files: TreeCopy = field(default_factory=TreeCopy)  # shared storage and /data/local/tmp
    clock: tuple[int, str] = (PHONE_EPOCH_MS, DEFAULT_ZONE)  # the phone's time and zone


class Phone:
    def __init__(
        self,
        serial: str,
        size: tuple[int, int] = (1080, 2400),
        faults: FaultInjector | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        self.serial = serial
        self.catalog = catalog or load_catalog()
        self.default_size = size
        self.state = PhoneState.fresh(self.catalog, size)
        self.faults = faults or FaultInjector(serial)
        self.snapshots: dict[str, Snapshot] = {}
        self.lock = threading.RLock()
        self.tree = PhoneTree()  # the phone's files on the host; removed with the phone
        self.users = Users([*system_packages(), *self.catalog.apps])  # uids, and who owns new files
        self._write_default_files()
        self.clock = Clock()  # the phone's time and zone (a snapshot holds them)
        self.storage = Storage(self.tree, self.lock, self.changed, self.users, self.clock.now_ms)
        self._userland: Userland | None = None
        self._finalizer = weakref.finalize(self, _end, self.tree, [None])
        self.root = False  # adbd runs as root (`adb root`); not part of snapshots, as adbd is not
        # Every app's records; the same object for the phone's lifetime (a snapshot load restores in place).
        self.logs = LogBuffer(self.clock)  # logd's buffers: what `log` writes and `logcat` reads
        self.data = AppStore(self.catalog.data_specs(), self.lock, self.changed, self.tree.host, self.clock)
        # What the screens of records read and write.
        self.reads = DataContext(self.data.find, self.storage, self.clock)
        check_screens(self.catalog, self.reads)
        self.version = 0  # bumped on every change; keys the frame cache
        self._tick = 0
        self._render_lock = threading.Lock()
        self._png: tuple[int, bytes] | None = None
        self._encoder = PngEncoder()  # used under _render_lock only
        self._layout: tuple[int, Layout] | None = None
        self._prerender_wanted = threading.Event()
        self._prerender_thread: threading.Thread | None = None

    # ---- the file tree and the shell -------------------------------------------------------------------
    def _write_default_files(self) -> None:
        """The apps' default files (`data.files`), with the boot time, so every fresh phone lists the same."""
        for path, data in self.catalog.default_files().items():
            host = self.tree.host(path)
            assert host is not None, path
            host.parent.mkdir(parents=True, exist_ok=True)
            host.write_bytes(data)
            host.chmod(0o660)
            os.utime(host, ns=(BOOT_MTIME_NS, BOOT_MTIME_NS))
            parent = host.parent
            while parent != self.tree.root:
                os.utime(parent, ns=(BOOT_MTIME_NS, BOOT_MTIME_NS))
                parent = parent.parent

    def userland(self) -> Userland:
        """The shell's sandbox and the phone's Android programs, started on first use."""
        with self.lock:
            if self._userland is None:
                from virtual_phone.shell.userland import (
                    Userland,  # imports every command module, which import us
                )

                self._userland = Userland(self)
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _end, self.tree, [self._userland])
            return self._userland

    def shell_ran(self) -> None:
        """After a shell command: if it changed what the apps can see in the files, the screen re-renders."""
        with self.lock:
            if self.storage.changed_since_last_look():
                self.changed()
            self.data.check_outside_writes()

    def close(self) -> None:
        """Ends the phone's sandbox (and every process in it) and removes its files."""
        self._finalizer()

    # ---- frames -------------------------------------------------------------------------------------
    def changed(self) -> None:
        with self.lock:
            self.version += 1
            ids = self.state.task_ids
            if ids.keys() != self.state.tasks.keys():
                for gone in [p for p in ids if p not in self.state.tasks]:
                    del ids[gone]
                for package in self.state.tasks:
                    self.state.task_id(package)

    def current_layout(self) -> Layout:
        with self.lock:
            if self.faults.config.restless_screen:
                self._tick += 1
                return layout(self.state, self.catalog, tick=self._tick, data=self.reads)
            if self._layout is None or self._layout[0] != self.version:
                self._layout = (self.version, layout(self.state, self.catalog, data=self.reads))
            return self._layout[1]

    def _frame_state(self) -> PhoneState:
        # What the painter reads, copied so that rendering can run outside the state lock.
        return replace(
            self.state,
            settings=copy.deepcopy(self.state.settings),
            tasks={k: list(v) for k, v in self.state.tasks.items()},
        )

    def screenshot_png(self) -> bytes:
        with self._render_lock:
            with self.lock:
                version = self.version
                restless = self.faults.config.restless_screen
                if not restless and self._png is not None and self._png[0] == version:
                    return self._png[1]
                lay = self.current_layout()
                st = self._frame_state()
            png = self._encoder.encode(render(lay, st))
            if not restless:
                self._png = (version, png)
            return png

    def prerender_soon(self) -> None:
        """Render the new frame on a helper thread, ahead of the screencap that usually follows a change."""
        if self.faults.config.restless_screen:
            return
        with self.lock:
            if self._prerender_thread is None:
                self._prerender_thread = threading.Thread(
                    target=self._prerender_loop, name=f"render-{self.serial}", daemon=True
                )
                self._prerender_thread.start()
        self._prerender_wanted.set()

    def _prerender_loop(self) -> None:
        while True:
            self._prerender_wanted.wait()
            self._prerender_wanted.clear()
            self.screenshot_png()

    def dump(self) -> str:
        return dump_xml(self.current_layout())

    # ---- settings -------------------------------------------------------------------------------------
    def get_setting(self, ns: str, key: str) -> str | None:
        with self.lock:
            return self.state.get(ns, key)

    def put_setting(self, ns: str, key: str, value: str, untrusted: bool = False) -> None:
        with self.lock:
            self.state.put(ns, key, value, untrusted)
            self.changed()

    def reset_settings(self, ns: str, mode: str) -> None:
        """`settings reset NS MODE`: back to the defaults what the shell set (untrusted_*), or everything."""
        with self.lock:
            defaults = self.catalog.defaults().get(ns, {})
            table = self.state.settings.setdefault(ns, {})
            keys = (
                list(table)
                if mode == "trusted_defaults"
                else [u.split("/", 1)[1] for u in sorted(self.state.untrusted) if u.startswith(ns + "/")]
            )
            for key in keys:
                if key in defaults:
                    self.state.put(ns, key, defaults[key])
                else:
                    table.pop(key, None)
                self.state.untrusted.discard(f"{ns}/{key}")
            self.changed()

    def delete_setting(self, ns: str, key: str) -> bool:
        with self.lock:
            found = self.state.settings.get(ns, {}).pop(key, None) is not None
            self.changed()
            return found

    # ---- navigation -----------------------------------------------------------------------------------
    def _close_transient(self) -> None:
        self.state.shade_open = False
        self.state.dialog = None
        self.state.keyboard_shown = False
        self.state.shift = False

    def _to_front(self, package: str) -> None:
        stack = self.state.tasks.pop(package)
        self.state.tasks[package] = stack

    def _end_task(self, package: str) -> None:
        del self.state.tasks[package]
        task = self.state.task_ids.pop(package, None)
        if task is not None and task == self.state.locked_task:
            self.state.locked_task = None

    def _pinned(self) -> bool:
        """The foreground task is locked (`am task lock`): Home and Back do not leave it."""
        st = self.state
        return st.locked_task is not None and st.task_ids.get(st.foreground) == st.locked_task

    def set_shade(self, open_: bool) -> None:
        with self.lock:
            if open_:
                self.state.keyboard_shown = False
            self.state.shade_open = open_
            self.changed()

    def go_home(self) -> None:
        with self.lock:
            if self._pinned():
                self.state.shade_open = False
                self.changed()
                return
            self._close_transient()
            self._to_front(self.catalog.home.package)
            self.changed()

    def launch(self, package: str) -> bool:
        """Start an app as its launcher icon does: resume its task, or start it at its launch screen."""
        with self.lock:
            app = self.catalog.apps.get(package)
            if app is None or app.home:
                if app is not None:
                    self.go_home()
                return app is not None
            self._close_transient()
            if package in self.state.tasks:
                self._to_front(package)
            else:
                self.state.tasks[package] = [Frame(app.launch_screen)]
            self.changed()
            return True

    def start_screen(self, package: str, screen: str) -> None:
        """What `am start` does: bring the app's task forward with this screen on top."""
        with self.lock:
            app = self.catalog.apps[package]
            self._close_transient()
            if app.home:
                self._to_front(package)
            elif package in self.state.tasks:
                self._to_front(package)
                if self.state.top.screen != screen:
                    self.state.tasks[package].append(Frame(screen))
            else:
                self.state.tasks[package] = [Frame(screen)]
            self.changed()

    def lock_task(self, task_id: int | None) -> bool:
        """`am task lock N` brings task N to the front and pins it; None (`stop`) unpins. True: now locked."""
        with self.lock:
            st = self.state
            pkg = next((p for p, t in st.task_ids.items() if t == task_id and p in st.tasks), None)
            st.locked_task = task_id if pkg is not None else None
            if pkg is not None:
                self._close_transient()
                self._to_front(pkg)
            self.changed()
            return st.locked_task is not None

    def force_stop(self, package: str) -> None:
        with self.lock:
            if package in self.state.tasks and package != self.catalog.home.package:
                was_front = self.state.foreground == package
                self._end_task(package)
                if was_front:
                    self._close_transient()
                    self._to_front(self.catalog.home.package)
                self.changed()

    def back(self) -> None:
        with self.lock:
            st = self.state
            if st.shade_open:
                st.shade_open = False
            elif st.keyboard_shown:
                st.keyboard_shown = False
            elif st.dialog is not None:
                st.dialog = None
            else:
                pkg = st.foreground
                if pkg == self.catalog.home.package:
                    return
                stack = st.tasks[pkg]
                if len(stack) > 1:
                    stack.pop()
                elif self._pinned():
                    return
                else:
                    self._end_task(pkg)
                    self._to_front(self.catalog.home.package)
            self.changed()

    # ---- input ------------------------------------------------------------------------------------------
    def _row(self, index: int) -> Row:
        app = self.catalog.apps[self.state.foreground]
        return app.screens[self.state.top.screen].rows[index]

    def tap(self, x: int, y: int) -> None:
        with self.lock:
            lay = self.current_layout()
            st = self.state
            if lay.shade is not None:
                self._tap_shade(lay.shade, x, y)
                return
            if lay.keyboard:
                kb = Metrics(st).keyboard_rect()
                if kb[1] <= y < kb[3]:
                    for key in lay.keyboard:
                        if contains(key.rect, x, y):
                            self._press_key(key.char)
                    return
            if lay.dialog is not None:
                target = hit(lay.dialog, x, y)
                if target is None and not contains(lay.dialog.bounds, x, y):
                    self._close_transient()
                    self.changed()
                    return
            else:
                target = hit(lay.window, x, y)
            if target is not None and target.tap is not None:
                self._apply(target.tap, target, x)

    def _press(self, x: int, y: int, long: bool) -> None:
        """A finger that does not move: a long press on a long-clickable view (no dialog open), else a tap."""
        lay = self.current_layout()
        target = long_hit(lay.window, x, y) if long and lay.dialog is None and lay.shade is None else None
        if target is None or target.long_tap is None:
            self.tap(x, y)
            return
        record_input.long_press(self._editor, target.long_tap)
        self.changed()

    def _tap_shade(self, shade: View, x: int, y: int) -> None:
        """A tap on the shade toggles the tile under it; a tap below the panel closes the shade."""
        target = hit(shade, x, y)
        if target is not None and target.tap is not None and target.tap.kind == "tile":
            toggle(TILES[int(target.tap.arg)], self.state)
        elif not contains(shade.bounds, x, y):
            self.state.shade_open = False
        self.changed()

    @property
    def _editor(self) -> Editor:
        return Editor(self.state, self.catalog, self.reads)

    def _apply(self, tap: Tap, view: View, x: int) -> None:
        st = self.state
        kind, arg = tap.kind, tap.arg
        if record_input.apply(self._editor, tap, x):
            self.changed()
            return
        if kind == "open":
            st.keyboard_shown = False
            st.tasks[st.foreground].append(Frame(str(arg)))
        elif kind == "search":
            target = self.catalog.apps[st.foreground].search_screen
            if target is not None:
                st.tasks[st.foreground].append(Frame(target))
                st.keyboard_shown = True
        elif kind == "launch":
            self.launch(str(arg))
        elif kind == "back":
            self._close_transient()
            self.back()
        elif kind == "toggle":
            row = self._row(int(arg))
            assert row.bind is not None
            new = row.off_value if switch_checked(row, st) else row.on_value
            st.put(row.bind.namespace, row.bind.key, new)
        elif kind == "choice":
            st.dialog = Dialog("choice", int(arg))
        elif kind == "edit":
            row = self._row(int(arg))
            assert row.bind is not None
            st.dialog = Dialog("text", int(arg), st.get(row.bind.namespace, row.bind.key) or "")
            st.keyboard_shown = True
        elif kind == "field":
            st.keyboard_shown = True
        elif kind == "choose" and st.dialog is not None:
            row = self._row(st.dialog.row)
            assert row.bind is not None
            st.put(row.bind.namespace, row.bind.key, str(arg))
            self._close_transient()
        elif kind == "dialog_ok":
            self._commit_text()
        elif kind == "dialog_cancel":
            self._close_transient()
        elif kind == "slider":
            row = self._row(int(arg))
            assert row.bind is not None
            x0, _, x1, _ = view.rect
            frac = min(1.0, max(0.0, (x - x0) / max(1, x1 - x0)))
            st.put(row.bind.namespace, row.bind.key, str(round(row.min + frac * (row.max - row.min))))
        self.changed()

    def _commit_text(self) -> None:
        st = self.state
        if st.dialog is not None and st.dialog.kind == "text":
            row = self._row(st.dialog.row)
            assert row.bind is not None
            st.put(row.bind.namespace, row.bind.key, st.dialog.draft)
        self._close_transient()

    def _press_key(self, ch: str) -> None:
        st = self.state
        if ch == "^":
            st.shift = not st.shift
        elif ch == "<":
            self._type_backspace()
        elif ch == ">":
            if record_input.enter(self._editor):
                pass
            elif self._in_search():
                st.keyboard_shown = False
            else:
                self._commit_text()
        else:
            self._type(ch.upper() if st.shift else ch)
            st.shift = False
        self.changed()

    def _in_search(self) -> bool:
        st = self.state
        return st.dialog is None and self.catalog.apps[st.foreground].screens[st.top.screen].style == "search"

    def _type(self, text: str) -> None:
        if record_input.type_text(self._editor, text):
            return
        d = self.state.dialog
        if d is not None and d.kind == "text":
            d.draft += text
            self.state.keyboard_shown = True
        elif self._in_search():
            top = self.state.top
            top.query += text
            top.scroll = 0
            self.state.keyboard_shown = True

    def _type_backspace(self) -> None:
        if record_input.backspace(self._editor):
            return
        d = self.state.dialog
        if d is not None and d.kind == "text":
            d.draft = d.draft[:-1]
        elif self._in_search():
            self.state.top.query = self.state.top.query[:-1]

    def text(self, s: str) -> None:
        with self.lock:
            self._type(s.replace("%s", " "))
            self.changed()

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        with self.lock:
            if abs(x2 - x1) < 16 and abs(y2 - y1) < 16:
                self._press(x1, y1, duration_ms >= LONG_PRESS_MS)
                return
            lay = self.current_layout()
            m = Metrics(self.state)
            down = y2 - y1 >= m.dp(48) and abs(y2 - y1) > abs(x2 - x1)
            on_home = self.state.foreground == self.catalog.home.package and lay.dialog is None
            if down and (y1 <= m.status_h or on_home):
                # A pull from the top edge opens the quick settings; so does a swipe down on the home screen
                # (the Pixel launcher's "swipe down for notifications").
                self.state.shade_open = True
                self.state.keyboard_shown = False
                self.changed()
                return
            if lay.shade is not None:
                if y1 - y2 >= m.dp(48) and y1 <= panel_rect(m)[3]:
                    self.state.shade_open = False
                    self.changed()
                return
            if lay.dialog is not None or lay.keyboard:
                return
            start = hit(lay.window, x1, y1)
            if start is not None and start.tap is not None and start.tap.kind == "slider":
                self._apply(start.tap, start, x2)
                return
            lst = lay.list_view
            if lst is None or not lst.scrollable:
                return
            if not contains(lst.bounds, x1, y1):
                return
            view_h = lst.bounds[3] - lst.bounds[1]
            frame = self.state.top
            frame.scroll = max(0, min(frame.scroll + (y1 - y2), lay.content_height - view_h))
            self.changed()

    def keyevent(self, code: int) -> None:
        with self.lock:
            if code == KEYCODES["BACK"] or code == KEYCODES["ESCAPE"]:
                self.back()
            elif code == KEYCODES["HOME"]:
                self.go_home()
            elif code == KEYCODES["ENTER"]:
                if record_input.enter(self._editor):
                    pass
                elif self.state.dialog is not None and self.state.dialog.kind == "text":
                    self._commit_text()
                elif self._in_search():
                    self.state.keyboard_shown = False
                self.changed()
            elif code in (KEYCODES["DEL"], KEYCODES["FORWARD_DEL"]):
                self._type_backspace()
                self.changed()
            elif code in KEY_CHARS:
                self._type(KEY_CHARS[code])
                self.changed()

    # ---- display ----------------------------------------------------------------------------------------
    def set_size(self, size: tuple[int, int] | None) -> None:
        with self.lock:
            self.state.width, self.state.height = size or self.default_size
            for stack in self.state.tasks.values():
                for f in stack:
                    f.scroll = 0
            self.changed()

    def set_density(self, density: int | None) -> None:
        with self.lock:
            self.state.density = density or 420
            self.changed()

    def reboot(self) -> None:
        with self.lock:
            home = self.catalog.home
            self.state.tasks = {home.package: [Frame(home.launch_screen)]}
            self._close_transient()
            self.logs.clear(BUFFERS)  # logd starts afresh
            self.changed()

    # ---- snapshots -----------------------------------------------------------------------------------
    def save_snapshot(self, name: str, now: float) -> None:
        with self.lock:
            self.snapshots[name] = Snapshot(
                name, self.state.to_json(), now, self.data.snapshot(), self.tree.copy(), self.clock.state()
            )

    def load_snapshot(self, name: str) -> bool:
        with self.lock:
            snap = self.snapshots.get(name)
            if snap is None:
                return False
            self.state = PhoneState.from_json(copy.deepcopy(snap.state))
            self.data.restore(snap.data)
            self.tree.restore(snap.files)
            self.clock.set(*snap.clock)
            self.storage.changed_since_last_look()
            self.changed()
            return True

    def delete_snapshot(self, name: str) -> bool:
        with self.lock:
            return self.snapshots.pop(name, None) is not None


def _end(tree: PhoneTree, userland: list[Userland | None]) -> None:
    for u in userland:
        if u is not None:
            u.close()
    tree.remove()
