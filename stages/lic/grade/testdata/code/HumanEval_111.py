from collections import Counter


def histogram(test):
    counts = Counter(word for word in test.split(" ") if word)
    if not counts:
        return {}
    most = max(counts.values())
    return {letter: n for letter, n in counts.items() if n == most}
