def add(a, b):
    return a + b


def greet(name):
    return "Hello, " + name + "!"
