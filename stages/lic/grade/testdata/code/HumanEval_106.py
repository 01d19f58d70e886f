import math


def f(n):
    values = []
    for i in range(1, n + 1):
        if i % 2 == 0:
            values.append(math.factorial(i))
        else:
            values.append(i * (i + 1) // 2)
    return values
