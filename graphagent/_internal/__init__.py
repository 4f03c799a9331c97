"""Seams between graphagent's packages: helpers two or more packages need, none of them API.

A package reaches a sibling through the sibling's face (its ``__init__``) or through a
module here; never through another package's private module (``tests/test_seams.py``).
Nothing here is public: names may change in any release.
"""
