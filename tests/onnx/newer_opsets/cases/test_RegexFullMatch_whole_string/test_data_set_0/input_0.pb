2	ab@cd.com2
ab@cd.com 2x@y.org2@y.org2a@b.netBx