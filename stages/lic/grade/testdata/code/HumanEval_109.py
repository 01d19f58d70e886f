def move_one_ball(arr):
    if not arr:
        return True
    n = len(arr)
    # A rotation of a sorted list has at most one place where a value is
    # larger than the one after it (counting the wrap-around).
    descents = sum(1 for i in range(n) if arr[i] > arr[(i + 1) % n])
    return descents <= 1
