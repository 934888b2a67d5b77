"""The agent's memory around the graph: session window, summaries, pinned facts, profile,
working memory, context assembly, reminders, shared memory with roles, procedural memory.

A client of the public :class:`ripple.Memory` / :class:`ripple.AsyncMemory` API only
(no store or private engine imports: ``tests/test_architecture.py`` checks it), with
I/O-free cores and thin sync and async drivers, so it runs the same on every store.
"""
