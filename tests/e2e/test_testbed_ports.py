"""The test bed's own port allocation: a probed-free port is closed again before a node binds it, so
nothing but `free_port`'s memory keeps two nodes of one cluster from being given the same port (a
rehearsal failed on "Address already in use" that way)."""
from conftest import free_port


def test_free_port_never_hands_out_a_port_twice():
    # 2,000 draws from the ~22,000 ports below the ephemeral range: without the memory about 90
    # repeats are expected (birthday bound), with it none.
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)
