def by_length(arr):
    names = ["One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]
    digits = sorted((x for x in arr if 1 <= x <= 9), reverse=True)
    return [names[d - 1] for d in digits]


print(by_length([2, 1, 1, 4, 5, 8, 2, 3]))
