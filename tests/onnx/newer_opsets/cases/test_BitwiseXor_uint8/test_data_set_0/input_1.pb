BbJ=¦
Y