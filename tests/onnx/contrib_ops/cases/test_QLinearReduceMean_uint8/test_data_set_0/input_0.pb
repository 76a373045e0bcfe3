BxJtyCqLZ$Dˆù
¤g*@q»‹OÌ»4ST