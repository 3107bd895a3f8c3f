"""What the results were measured on: CPU, memory, kernel, the disk under the data
directories, and the versions of everything compared."""

import os
import platform
import subprocess
import sys

from .install import REPO


def details(workdir, versions):
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(memory_bytes() / 2**30, 1),
        "kernel": platform.release(),
        "os": os_name(),
        "data_disk": disk_of(workdir),
        "quill_commit": git(["rev-parse", "--short", "HEAD"]) + (" (modified)" if git(["status", "--porcelain", "--untracked-files=no"]) else ""),
        "versions": versions,
    }


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_bytes():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def os_name():
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def disk_of(path):
    result = subprocess.run(["df", "--output=source,fstype", str(path)], capture_output=True, text=True)
    lines = result.stdout.split("\n")
    if result.returncode != 0 or len(lines) < 2:
        return "unknown"
    source, _, fstype = lines[1].partition(" ")
    return f"{source.strip()} ({fstype.strip()})"


def git(arguments):
    result = subprocess.run(["git", *arguments], capture_output=True, text=True, cwd=REPO)
    return result.stdout.strip() if result.returncode == 0 else ""


def sysbench_version():
    result = subprocess.run(["sysbench", "--version"], capture_output=True, text=True)
    return result.stdout.strip().removeprefix("sysbench ")


class CpuHog:
    """A busy loop in a child process pinned to one core: the busy neighbour of --noisy."""

    def __init__(self, process, core):
        self.process = process
        self.core = core


_hog = None


def start_cpu_hog():
    """Starts the hog on the last core the harness may use; `stop_cpu_hog` ends it."""
    global _hog
    core = max(os.sched_getaffinity(0))
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    _hog = CpuHog(process, core)
    return _hog


def stop_cpu_hog():
    global _hog
    if _hog is not None:
        _hog.process.kill()
        _hog.process.wait()
        _hog = None
