from tests.reporting_standin import install_if_missing

install_if_missing()
