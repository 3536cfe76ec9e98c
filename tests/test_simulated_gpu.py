"""The GPU the CPU plays (`_simulated_gpu`, the set-up cell of lessons 1, 2, 3, 5 and 6; see
docs/grade-integrity.md): it refuses what CUDA refuses and runs what CUDA runs, with real values.
Each case is run on the stand-in here and, where CUDA exists (the GPU pass of `make test` runs this
module again with the device visible), on the real device too, so both must give the same verdict."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from tools import source

pytestmark = [pytest.mark.gpu, pytest.mark.unit]

LESSONS = ("01_blocks", "02_parameters", "03_initialization", "05_custom_layers", "06_file_io")


def set_up_cell(lesson: str) -> str:
    exercise = source.read_source(source.lessons_dir() / lesson / "exercise.py")
    (cell,) = [c.source for c in exercise.cells if c.cell_type == "code" and "def _simulated_gpu():" in c.source]
    return cell


@pytest.fixture(scope="module")
def simulated():
    space = {"torch": torch, "nn": nn}
    exec(compile(set_up_cell("03_initialization"), "<set-up cell>", "exec"), space)
    return space


def test_every_lesson_carries_the_shared_stand_in():
    shared = (source.lessons_dir() / "shared" / "simulated_gpu.py").read_text(encoding="utf-8")
    cells = {lesson: set_up_cell(lesson) + "\n" for lesson in LESSONS}
    assert set(cells.values()) == {shared}, "a lesson's _simulated_gpu cell is not `# include: simulated_gpu.py`"


def _mul_by_cpu_mask(gpu):
    t = torch.ones(4, 4, device=gpu)
    t.mul_(torch.ones(4, 4) > 0)  # a non-scalar CPU tensor in an in-place op


def _mask_fill(gpu):
    t = torch.randn(6, 5, device=gpu)
    t[t.abs() < 0.5] = 0
    return t[t != 0].sum()  # nonzero on the device: CUDA runs it, meta has no kernel


def _scalar_cpu_operand(gpu):
    return torch.ones(3, device=gpu) * torch.tensor(2.0)  # a 0-d CPU tensor counts as a number


def _cpu_generator(gpu):
    return torch.randn(3, device=gpu, generator=torch.Generator().manual_seed(0))


def _numpy_of_gpu(gpu):
    return torch.ones(2, device=gpu).numpy()


def _copy_from_cpu(gpu):
    t = torch.empty(3, device=gpu)
    return t.copy_(torch.arange(3.0))  # copies cross devices


def _cpu_index(gpu):
    return torch.arange(5.0, device=gpu)[torch.tensor([0, 2])]  # CPU indices are allowed


def _matmul_mixed(gpu):
    return torch.ones(2, 2, device=gpu) @ torch.ones(2, 2)


def _rng_state_on_gpu(gpu):
    torch.set_rng_state(torch.get_rng_state().to(gpu))


def _module_on_gpu(gpu):
    with torch.device(gpu):
        layer = nn.Linear(3, 2)
    return layer(torch.randn(4, 3, device=gpu)).sum()


CASES = [  # (what, CUDA's verdict, code)
    ("in-place op with a non-scalar CPU tensor", "raises", _mul_by_cpu_mask),
    ("boolean-mask fill and read", "runs", _mask_fill),
    ("0-d CPU tensor as an operand", "runs", _scalar_cpu_operand),
    ("CPU generator for a GPU draw", "raises", _cpu_generator),
    ("numpy() of a GPU tensor", "raises", _numpy_of_gpu),
    ("copy_ from the CPU", "runs", _copy_from_cpu),
    ("CPU index tensor", "runs", _cpu_index),
    ("matmul with a CPU operand", "raises", _matmul_mixed),
    ("a GPU tensor as torch's RNG state", "raises", _rng_state_on_gpu),
    ("a layer built and run on the GPU", "runs", _module_on_gpu),
]


def verdict(code, gpu) -> str:
    try:
        code(gpu)
    except (RuntimeError, TypeError):
        return "raises"
    return "runs"


@pytest.mark.parametrize(("what", "cuda", "code"), CASES, ids=[c[0] for c in CASES])
def test_the_stand_in_gives_cudas_verdict(simulated, what, cuda, code):
    state = torch.get_rng_state()
    try:
        with simulated["_simulated_gpu"]() as gpu:
            assert verdict(code, gpu) == cuda, f"{what}: CUDA {cuda}, the stand-in does not"
        if torch.cuda.is_available():  # the GPU pass of make test: the real device must agree
            assert verdict(code, torch.device("cuda")) == cuda, f"{what}: the table says CUDA {cuda}"
    finally:
        torch.set_rng_state(state)


def test_values_are_real_and_cpu_gives_a_plain_tensor_back(simulated):
    x = torch.randn(5, 3)
    with simulated["_simulated_gpu"]() as gpu:
        on_gpu = x.to(gpu)
        y = (on_gpu @ on_gpu.T).relu()
        back = y.cpu()
    assert on_gpu.device == gpu and on_gpu.is_cuda and y.device == gpu
    assert type(back) is torch.Tensor and back.device.type == "cpu" and torch.equal(back, (x @ x.T).relu())


def test_map_location_cuda_loads_onto_it_and_nothing_stays_patched(simulated):
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2), "rng": torch.get_rng_state()}, buffer)
    real_load, real_set = torch.load, torch.set_rng_state
    with simulated["_simulated_gpu"]() as gpu:
        buffer.seek(0)
        state = torch.load(buffer, map_location="cuda")
        assert state["w"].device == gpu and state["rng"].device == gpu
        torch.set_rng_state(state["rng"].cpu())  # what a right load_checkpoint does
    assert torch.load is real_load and torch.set_rng_state is real_set
    assert not torch.__future__.get_swap_module_params_on_conversion()
