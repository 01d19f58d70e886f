from collections import Counter


def histogram(test):
    return dict(Counter(word for word in test.split(" ") if word))
