"""The trusted test path. The kernel's side is the runner, one start-up file assembled from
the parts here in trusted.RUNNER_PARTS order (who, audit, hooks, test, channel, data, reset,
torch_state, then assembly.py); these parts import only each other, since the kernel runs them
as one file. The grader's side is trusted.py: it writes that file, scrubs hidden tests and
talks to the runner over its channel."""
