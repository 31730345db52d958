import torch

# a notebook's separators, after a .data that is never indexed
w = model.weight.data
#########################################################################
y = (x.data.cpu(   ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) )  # ) ) ) ) ) ) ) ) ) )
z = x . data  # ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ## ##
