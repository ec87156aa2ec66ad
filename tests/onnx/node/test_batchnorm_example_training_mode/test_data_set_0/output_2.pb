B
output_varJ„`v?’/c?Pù	>