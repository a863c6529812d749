"""One adapter module per outside system. Domain code receives adapters and
never imports a client library itself."""
