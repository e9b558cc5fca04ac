"""The runner's mount namespace (`unshare --mount`): a size-capped tmpfs on the scratch
directory, the Python installation made reachable for `nobody`, and a view of the host's
files that shows only what the code may read (`hide_host`).

Both happen as root before the worker drops its privileges; the namespace dies with
the child, and the tmpfs with it. Mount propagation is private (unshare's default),
so nothing here is seen on the host."""

from __future__ import annotations

import ctypes
import os
import stat

MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
OPEN_TREE_CLONE, AT_RECURSIVE, AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, -100, 4
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429  # the same on every architecture
MAX_PASSES = 8  # a blocked directory under a blocked directory: each pass uncovers one level


def libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 0x40000


def enter_namespaces(mount: bool, net: bool) -> None:
    """What `unshare --mount --net` does before it starts its command: new namespaces, and in the new
    mount namespace no mount event shared with the host's (raises OSError)."""
    flags = (CLONE_NEWNS if mount else 0) | (CLONE_NEWNET if net else 0)
    if not flags:
        return
    lib = libc()
    if lib.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    if mount and lib.mount(b"none", b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")


def mount_tmpfs(target: str, options: str, flags: int) -> None:
    if libc().mount(b"tmpfs", target.encode(), b"tmpfs", ctypes.c_ulong(flags), options.encode()) != 0:
        raise OSError(ctypes.get_errno(), f"mount tmpfs on {target}")


def scratch_tmpfs(scratch: str, size_mb: int, files: int, ids: tuple[int, int] | None) -> None:
    """The scratch directory becomes a tmpfs of `size_mb` MiB and `files` inodes, owned by the worker."""
    owner = f",uid={ids[0]},gid={ids[1]}" if ids else ""
    mount_tmpfs(scratch, f"size={size_mb}m,nr_inodes={files},mode=0700{owner}", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def can_traverse(path: str, uid: int, gid: int) -> bool:
    info = os.stat(path)
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def blocked(paths: list[str], uid: int, gid: int) -> dict[str, set[str]]:
    """For each path, its first ancestor `uid` cannot pass, with the child on the way."""
    found: dict[str, set[str]] = {}
    for path in paths:
        parts = os.path.realpath(path).strip("/").split("/")
        for depth in range(len(parts) - 1):
            ancestor = "/" + "/".join(parts[:depth])
            if os.path.lexists(ancestor) and not can_traverse(ancestor, uid, gid):
                found.setdefault(ancestor, set()).add(parts[depth])
                break
    return found


def uncover(directory: str, children: set[str]) -> None:
    """Cover `directory` with an empty world-passable tmpfs, and put back only `children`
    (detached bind mounts, moved into place): everything else in it stays out of sight."""
    lib = libc()
    trees = {}
    for child in children:
        source = os.path.join(directory, child).encode()
        flags = ctypes.c_uint(OPEN_TREE_CLONE | AT_RECURSIVE)
        fd = int(lib.syscall(ctypes.c_long(SYS_OPEN_TREE), ctypes.c_int(AT_FDCWD), source, flags))
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"open_tree {directory}/{child}")
        trees[child] = (fd, os.path.isdir(os.path.join(directory, child)))
    mount_tmpfs(directory, "mode=0755,size=64k,nr_inodes=256", MS_NOSUID | MS_NODEV)
    for child, (fd, is_dir) in trees.items():
        target = os.path.join(directory, child)
        if is_dir:
            os.mkdir(target)
        else:
            open(target, "w").close()
        moved = lib.syscall(ctypes.c_long(SYS_MOVE_MOUNT), ctypes.c_int(fd), b"", ctypes.c_int(AT_FDCWD),
                            target.encode(), ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH))  # fmt: skip
        os.close(fd)
        if moved != 0:
            raise OSError(ctypes.get_errno(), f"move_mount {target}")


def expose(paths: list[str], ids: tuple[int, int]) -> list[str]:
    """Make every path in `paths` reachable for `ids` (a Python installation under /root, say);
    returns the directories covered. Raises OSError where that cannot be done."""
    covered: list[str] = []
    for _ in range(MAX_PASSES):
        found = blocked([path for path in paths if os.path.exists(path)], *ids)
        if not found:
            return covered
        for directory in sorted(found, key=len):
            uncover(directory, found[directory])
            covered.append(directory)
    raise OSError(f"paths still blocked after {MAX_PASSES} passes: {sorted(blocked(paths, *ids))}")


ALWAYS_SHOWN = ("/proc", "/dev")  # the process's own view and the device nodes (Landlock rules their use)


def hide_host(keep: list[str]) -> list[str]:
    """Show only `keep` (and /proc, /dev) of the host's file tree: each directory on the way to a kept path
    becomes an empty tmpfs holding only the next step (`uncover`), each top-level directory with nothing
    kept an empty tmpfs. Landlock rules reads and writes but not stat, readlink or path lookups: a `stat
    /etc/shadow` told its size and times, a `readlink /etc/localtime` its target. Now they find nothing.
    Returns the directories covered."""
    kept = {os.path.realpath(path) for path in keep if os.path.lexists(path)} | set(ALWAYS_SHOWN)
    on_the_way = steps_to(kept)
    return hide_top_level(on_the_way["/"]) + uncover_on_the_way(on_the_way, kept, "/")


def hide_under(root: str, keep: list[str]) -> list[str]:
    """hide_host below `root` alone, for a namespace that shows `root` whole and hides the rest already
    (the fork server's, copied): each folder from `root` down to a kept path shows only the next step."""
    kept = {os.path.realpath(path) for path in keep if os.path.lexists(path)}
    return uncover_on_the_way(steps_to(kept), kept, root)


def steps_to(kept: set[str]) -> dict[str, set[str]]:
    """For each folder on the way to a kept path, the names in it that lead there."""
    on_the_way: dict[str, set[str]] = {}
    for path in kept:
        parts = path.strip("/").split("/")
        for depth in range(len(parts)):
            on_the_way.setdefault("/" + "/".join(parts[:depth]), set()).add(parts[depth])
    return on_the_way


def uncover_on_the_way(on_the_way: dict[str, set[str]], kept: set[str], root: str) -> list[str]:
    """Cover each folder on the way at or under `root` (but "/" and what is kept) with only its next steps."""
    covered = []
    for folder in sorted(on_the_way, key=lambda f: (f.count("/"), f)):
        below = folder == root or folder.startswith(root.rstrip("/") + "/")
        if folder != "/" and below and not any(folder == k or folder.startswith(k + "/") for k in kept):
            uncover(folder, on_the_way[folder])
            covered.append(folder)
    return covered


def hide_top_level(shown: set[str]) -> list[str]:
    """An empty tmpfs over each top-level directory not in `shown` (symlinks such as /lib -> usr/lib stay:
    a mount would land on their target); returns those covered."""
    covered = []
    for entry in sorted(os.listdir("/")):
        path = "/" + entry
        if entry not in shown and os.path.isdir(path) and not os.path.islink(path):
            mount_tmpfs(path, "mode=0755,size=4k,nr_inodes=16", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            covered.append(path)
    return covered
