def move_one_ball(arr):
    return arr == sorted(arr)
