"""HTTP layer: thin routers that parse, call a service and shape the response."""
