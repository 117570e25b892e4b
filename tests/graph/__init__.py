"""The graph: nodes, saved tensors and their hooks, tensor and node hooks, views, retain_grad, lifetimes."""
