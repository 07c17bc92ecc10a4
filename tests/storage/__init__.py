"""Tests of tricks_helpers.storage, one file per module (a package: test basenames stay unique)."""
