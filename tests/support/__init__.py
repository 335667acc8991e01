"""Helpers the test modules share (tests/ is on the path: `from support.scripted import ...`).

- hub_server: a Hugging Face Hub-compatible HTTP server over hub_repos, its in-memory
  git-like repos.
- hub_mirror: every Hub repo the sources read, seeded on that server from tests/fixtures.
- hub_models: a tiny random-weight Llama served under the real Llama 3.1 id.
- nq2: one small real SmolLM2 build of two nq-sample queries, built once, copied per module.
- plugins: a package's entry points (a plugin method or backend) installed for a test.
- processes: a real process killed at a chosen moment, for the tests of resumption.
- scripted: the scripted LLM backend for unit tests of a method's parsing and arithmetic.
- workers: make test's pytest-xdist scheduling, a file (or the Ray executor folder) a worker.
"""
