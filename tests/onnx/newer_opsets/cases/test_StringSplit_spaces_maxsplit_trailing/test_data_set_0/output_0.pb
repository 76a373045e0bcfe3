2a2b  c  2lead2
and trail By0