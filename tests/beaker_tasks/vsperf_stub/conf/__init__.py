"""VSperf's ``conf`` package as our collector sees it: ``settings.getValue(NAME)``."""


class _Settings:
    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def getValue(self, name: str) -> object:  # VSperf's own name
        if name not in self.values:
            raise AttributeError(f"{name} is not set")  # VSperf raises AttributeError too
        return self.values[name]


settings = _Settings()
