"""Other files of a project for the tests of rules that read them."""


def unparsable_module(head: str, definition: str) -> str:
    """A module that the semantic model cuts into parts (long enough, many definitions)
    with ``head`` first and ``definition`` (a def or class holding Python 2 code, which
    does not parse) among them: parsed part by part on demand, it would fail only when
    that part is read."""
    filler = "".join(f"x{i} = {i}\n" for i in range(150))
    tail = "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(80))
    return head + filler + "\n\n" + definition + tail
