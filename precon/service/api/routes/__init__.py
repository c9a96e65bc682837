"""The operations of the listings API, one router per resource; ``precon.service.app`` includes them."""
