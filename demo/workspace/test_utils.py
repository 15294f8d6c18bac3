import unittest

from utils import add, greet


class UtilsTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_greet(self):
        self.assertEqual(greet("airlock"), "Hello, airlock!")


if __name__ == "__main__":
    unittest.main()
