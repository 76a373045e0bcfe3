2x	y
z2a 
 bc　d eBx