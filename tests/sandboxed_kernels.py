"""A sandboxed kernel started, run and stopped the way the grader starts one, for the tests of
the kernel template's own life (test_template.py). A module of its own so that a child Python
can start one too (a client that dies without stopping its kernel)."""

from traitlets.config import Config

from grader.isolation import uids
from grader.isolation.sandbox import SandboxedKernelManager
from grader.kernels import template


async def start(scratch):
    """A kernel of the grader's kernel spec (forked from the template where it runs), sandboxed
    under the first sandbox uid with `scratch` as its folder, and its client, ready."""
    config = Config()
    config.SandboxedKernelManager.scratch = scratch
    config.SandboxedKernelManager.uid = uids.FIRST_UID
    km = SandboxedKernelManager(kernel_name=template.GRADER_KERNEL, config=config)
    await km.start_kernel()
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    return km, kc


async def run(kc, code) -> str:
    """What `code` printed in the kernel of `kc`."""
    out = []
    await kc.execute_interactive(code, timeout=30, output_hook=lambda m: out.append(m["content"].get("text", "")))
    return "".join(out)


async def stop(km, kc):
    kc.stop_channels()
    await km.shutdown_kernel(now=True)
