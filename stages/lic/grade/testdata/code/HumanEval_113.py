def odd_count(lst):
    result = []
    for digits in lst:
        k = sum(1 for d in digits if d in "13579")
        result.append(f"the number of odd elements {k}n the str{k}ng {k} of the {k}nput.")
    return result
