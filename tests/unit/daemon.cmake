# Daemon modules that need no daemon around them: the advisor's rule and
# the Prometheus exposition (against the ptodcore library).
pto_test(test_advise SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_advise.c LIBS ptodcore LABELS unit)
