// (filled in by the tests of this family)
